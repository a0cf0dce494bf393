"""The web view of traces and stats: server-rendered HTML and SVG over the stores, read-only.

| Module | Job |
|---|---|
| ``timeline.py`` | a trace's events read as lanes on one time axis, and the call's summary |
| ``data.py`` | the reads the pages make, through the store protocols, with the viewer's tenant |
| ``markup.py`` | HTML and SVG built with every value escaped |
| ``svg.py`` | the timeline and bar charts as inline SVG |
| ``pages.py`` | the pages: trace list, trace, stats, login, messages |
| ``style.py`` | the style sheet (outcome colours) |
| ``sessions.py`` | server-side login sessions behind an HttpOnly cookie |
| ``app.py`` | the ASGI app: routes, logins, security headers, host checks |
| ``local.py`` | ``ask-fable ui``: a loopback server over read-only stores |

The team server mounts the same app under ``/ui`` (``surface/http_app.py``).
"""

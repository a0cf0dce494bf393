"""Per-key quotas around one call: admitted before anything runs, settled with its real cost after.

An HTTP key's limits are its own (``ask-fable keys create/update --rpm --concurrent --daily-usd``)
or the settings' defaults (``key_rpm``, ``key_concurrent``, ``key_daily_usd``); 0 is unlimited.
The local caller (stdio, the command line) is unlimited unless ``local_quota`` applies the defaults
to it too. The counting itself is the quota store's (``stores/quotas.py``), atomic across processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ask_fable.errors import QuotaExceeded
from ask_fable.stores.records import QuotaLimits
from ask_fable.stores.views import AdmitRequest, SettleRequest

if TYPE_CHECKING:
    from ask_fable.config import Settings
    from ask_fable.core.app import App
    from ask_fable.stores.records import ApiKey

#: The key id the local caller's use is counted under, in its tenant.
LOCAL_KEY_ID = 0

#: Each limit: what it counts, the key option that sets it, and the setting of its default.
LIMITS: dict[str, tuple[str, str, str]] = {
    "rpm": ("calls per minute", "--rpm", "ASK_FABLE_KEY_RPM"),
    "concurrent": ("calls in flight at once", "--concurrent", "ASK_FABLE_KEY_CONCURRENT"),
    "daily_usd": ("dollars of cost per UTC day", "--daily-usd", "ASK_FABLE_KEY_DAILY_USD"),
}


@dataclass(frozen=True)
class KeyQuota:
    """Whose quota a call counts against, and its limits (``None``: that one is unlimited)."""

    tenant: str
    key_id: int
    limits: QuotaLimits
    #: The key's display prefix, for refusals (the local caller has none).
    label: str = "the local caller"


def _pick(own: float | None, default: float) -> float | None:
    value = default if own is None else own
    return None if value <= 0 else value


def effective_limits(own: QuotaLimits, settings: Settings) -> QuotaLimits:
    """The limits in force: each of ``own`` or the setting's default, 0 meaning unlimited."""
    rpm = _pick(own.rpm, settings.key_rpm)
    concurrent = _pick(own.concurrent, settings.key_concurrent)
    return QuotaLimits(rpm=None if rpm is None else int(rpm),
                       concurrent=None if concurrent is None else int(concurrent),
                       daily_usd=_pick(own.daily_usd, settings.key_daily_usd))


def key_quota(key: ApiKey | None, tenant: str, settings: Settings) -> KeyQuota | None:
    """The quota a caller's calls count against: its HTTP key's, the local caller's when
    ``local_quota`` is on, else ``None`` (unlimited)."""
    if key is None:
        if not settings.local_quota:
            return None
        limits = effective_limits(QuotaLimits(), settings)
        quota = KeyQuota(tenant, LOCAL_KEY_ID, limits)
    else:
        limits = effective_limits(key.limits, settings)
        quota = KeyQuota(key.tenant, key.id, limits, label=f"API key {key.prefix}… ({key.name!r})")
    if limits == QuotaLimits():
        return None
    return quota


def _refusal(quota: KeyQuota, limit: str, used: float | None, retry_after_s: float | None,
             reserve: float) -> QuotaExceeded:
    what, option, setting = LIMITS[limit]
    allowed = getattr(quota.limits, limit)
    shown = f"${used:.4f} of ${allowed:.4f}" if limit == "daily_usd" else f"{used:.0f} of {allowed}"
    when = {"rpm": "when this minute ends", "concurrent": "when one of its calls in flight ends",
            "daily_usd": "at 00:00 UTC"}[limit]
    if limit == "daily_usd" and retry_after_s is None:
        when = "on no day for this call, which could cost more than the whole budget"
    elif limit == "daily_usd" and retry_after_s is not None and retry_after_s < 60:
        when = "when its calls in flight end below what they set aside"
    need = f"; this call could cost up to ${reserve:.4f}" if limit == "daily_usd" and reserve > 0 else ""
    refusal = QuotaExceeded(
        f"{quota.label} is at its limit of {what} ({shown} used or set aside{need}, {limit}); no model was "
        f"called. It frees {when}." if limit == "daily_usd" else
        f"{quota.label} is at its limit of {what} ({shown}, {limit}); no model was called. It frees {when}.",
        hint=f"retry after retry_after_s, or ask an admin to raise it: `ask-fable keys update ID {option} N` "
        f"(the default for every key is {setting})",
        retry_after_s=retry_after_s,
    )
    refusal.limit = limit
    return refusal


class QuotaHold:
    """An admitted call's place in its key's quotas, released by :meth:`settle`."""

    def __init__(self, app: App, quota: KeyQuota, ticket: str) -> None:
        self.app, self.quota, self.ticket = app, quota, ticket
        #: The settlement was handed over (:meth:`handover`): :meth:`settle` has nothing left to do.
        self.handed = False

    def handover(self, cost_usd: float) -> SettleRequest:
        """The call's settlement, for the caller to write with its records (``RecordWriter.write``,
        which hands it back to the batcher should it fail); its lease is no longer renewed."""
        self.handed = True
        quota = self.quota
        self.app.quota_batcher.live.discard(self.ticket)
        return SettleRequest(quota.tenant, quota.key_id, self.ticket, cost_usd)

    async def settle(self, cost_usd: float) -> bool:
        """Free the call's place and count its real cost (shielded: a cancelled call still settles);
        False when the store failed: the settlement is retried with this process's next quota work.
        Nothing to do once handed over."""
        if self.handed:
            return True
        self.handed = True
        quota = self.quota
        request = SettleRequest(quota.tenant, quota.key_id, self.ticket, cost_usd)
        return await self.app.quota_batcher.settle(request)


async def admit(app: App, quota: KeyQuota | None, *, reserve: float | None = None) -> QuotaHold | None:
    """Admit one call against ``quota`` (``None``: unlimited, nothing to hold), or raise
    :class:`QuotaExceeded` naming the limit, with ``retry_after_s``. The call sets aside ``reserve``
    dollars (its estimate; default ``quota_reserve_usd`` for a call that has none, 0 for one that
    costs nothing) until it settles, and is refused unless all of it fits in the budget left."""
    if quota is None:
        return None
    if reserve is None:
        reserve = app.settings.quota_reserve_usd
    admission = await app.quota_batcher.admit(AdmitRequest(quota.tenant, quota.key_id, quota.limits, reserve))
    if not admission.admitted or admission.ticket is None:
        limit = admission.limit or "rpm"
        if app.metrics is not None:
            app.metrics.quota_refused(limit)
        raise _refusal(quota, limit, admission.used, admission.retry_after_s, reserve)
    return QuotaHold(app, quota, admission.ticket)

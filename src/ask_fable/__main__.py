"""``python -m ask_fable`` runs the same command as ``ask-fable``."""

from ask_fable.cli import console_main

if __name__ == "__main__":
    raise SystemExit(console_main())

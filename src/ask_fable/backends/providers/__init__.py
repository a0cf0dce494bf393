"""The built-in HTTP providers, one module each: its settings, its descriptor and its factory."""

"""The app's theme, registered once; widgets use only its variables ($primary, $error, ...)."""

from __future__ import annotations

from textual.theme import Theme

TAO_DARK = Theme(
    name="tao-dark",
    primary="#76B900",
    secondary="#5E9BD6",
    accent="#E0A526",
    warning="#E0A526",
    error="#E5534B",
    success="#57AB5A",
    foreground="#D8DEE4",
    background="#15191E",
    surface="#1C2128",
    panel="#262C36",
    dark=True,
)
"""Dark theme in NVIDIA green; the only place colours are spelled out."""

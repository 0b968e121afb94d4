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

TAO_LIGHT = Theme(
    name="tao-light",
    primary="#3F6E00",
    secondary="#1F5FA8",
    accent="#8A5A00",
    warning="#9A6700",
    error="#B42318",
    success="#2E7D32",
    foreground="#1F2328",
    background="#F6F8FA",
    surface="#FFFFFF",
    panel="#E6EAEF",
    dark=False,
)
"""The same palette for light terminals (darker hues, so text keeps its contrast)."""

THEMES = (TAO_DARK, TAO_LIGHT)
"""The app's own themes (registered at start; Textual's built-in ones stay available)."""

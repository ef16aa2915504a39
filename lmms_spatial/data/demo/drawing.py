"""Tiny PIL drawing helpers shared by the synthetic dataset builders."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw

COLOURS = {
    "red": (220, 40, 40),
    "blue": (40, 80, 220),
    "green": (40, 170, 70),
    "yellow": (230, 200, 30),
    "purple": (140, 60, 180),
}


def canvas(width: int, height: int, background=(235, 235, 228)) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (width, height), background)
    return image, ImageDraw.Draw(image)


def draw_shape(draw: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, size: float, colour: str) -> None:
    fill = COLOURS[colour]
    box = (cx - size, cy - size, cx + size, cy + size)
    if shape == "square":
        draw.rectangle(box, fill=fill)
    elif shape == "circle":
        draw.ellipse(box, fill=fill)
    elif shape == "triangle":
        draw.polygon([(cx, cy - size), (cx - size, cy + size), (cx + size, cy + size)], fill=fill)
    else:
        raise ValueError(f"unknown shape {shape!r}")


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()

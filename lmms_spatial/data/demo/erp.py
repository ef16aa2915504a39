"""Synthetic equirectangular (ERP) panoramas: objects drawn at known yaw / pitch.

Convention (the one py360convert's ``e2p`` uses, SPEC §3.4): the viewer stands at the centre
of the sphere facing yaw 0°, which is the centre column of the ERP; yaw +90° (right) is at
3W/4, −90° (left) at W/4, ±180° (behind) at the left/right border; pitch +90° is the top
row, 0° the horizon (the middle row)::

    x = (yaw + 180) / 360 * W        y = (90 - pitch) / 180 * H

Shapes that cross the left/right border are drawn on both sides, as a real ERP shows them.
"""

from __future__ import annotations

from PIL import Image, ImageDraw

from lmms_spatial.data.demo.drawing import COLOURS, draw_shape

SKY = (170, 200, 235)
GROUND = (150, 140, 120)

# yaw of the four egocentric directions and of the eight compass-like ones
DIRECTION_YAW = {
    "front": 0.0,
    "front-right": 45.0,
    "right": 90.0,
    "back-right": 135.0,
    "back": 180.0,
    "back-left": -135.0,
    "left": -90.0,
    "front-left": -45.0,
}


def yaw_to_direction(yaw: float, eight: bool = False) -> str:
    """The nearest of the 4 (or 8) direction words for a yaw in degrees."""
    names = list(DIRECTION_YAW) if eight else ["front", "right", "back", "left"]
    yaw = (yaw + 180.0) % 360.0 - 180.0

    def distance(name: str) -> float:
        d = abs(DIRECTION_YAW[name] - yaw) % 360.0
        return min(d, 360.0 - d)

    return min(names, key=distance)


def to_xy(yaw: float, pitch: float, width: int, height: int) -> tuple[float, float]:
    """Pixel position of a direction on the ERP (see the module docstring)."""
    yaw = (yaw + 180.0) % 360.0 - 180.0
    return (yaw + 180.0) / 360.0 * width, (90.0 - pitch) / 180.0 * height


def to_yaw_pitch(x: float, y: float, width: int, height: int) -> tuple[float, float]:
    """Inverse of :func:`to_xy`."""
    return x / width * 360.0 - 180.0, 90.0 - y / height * 180.0


def erp_canvas(width: int = 256, height: int = 128) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    """Sky above the horizon, ground below."""
    image = Image.new("RGB", (width, height), SKY)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, height // 2, width, height), fill=GROUND)
    return image, draw


def _wrapped_xs(x: float, half_width: float, width: int) -> list[float]:
    xs = [x]
    if x - half_width < 0:
        xs.append(x + width)
    if x + half_width > width:
        xs.append(x - width)
    return xs


def draw_object(
    draw: ImageDraw.ImageDraw, shape: str, colour: str, yaw: float, pitch: float, size: float, width: int, height: int
) -> None:
    """A coloured square / circle / triangle centred at (yaw, pitch), wrapped across the border."""
    x, y = to_xy(yaw, pitch, width, height)
    for cx in _wrapped_xs(x, size, width):
        draw_shape(draw, shape, cx, y, size, colour)


def draw_bar(draw: ImageDraw.ImageDraw, colour: str, yaw: float, half_width: float, width: int, height: int) -> None:
    """A vertical bar centred at ``yaw`` spanning the horizon; split in two when it crosses the border."""
    x, _ = to_xy(yaw, 0.0, width, height)
    for cx in _wrapped_xs(x, half_width, width):
        draw.rectangle((cx - half_width, height * 0.35, cx + half_width, height * 0.65), fill=COLOURS[colour])


def draw_person(draw: ImageDraw.ImageDraw, shirt: str, yaw: float, width: int, height: int) -> None:
    """A stick figure standing on the horizon at ``yaw``: head, shirt of colour ``shirt``, legs."""
    x, y = to_xy(yaw, 0.0, width, height)
    scale = height / 128.0
    draw.ellipse((x - 4 * scale, y - 30 * scale, x + 4 * scale, y - 22 * scale), fill=(240, 200, 170))
    draw.rectangle((x - 6 * scale, y - 22 * scale, x + 6 * scale, y - 6 * scale), fill=COLOURS[shirt])
    draw.line((x - 3 * scale, y - 6 * scale, x - 4 * scale, y + 8 * scale), fill=(30, 30, 30), width=2)
    draw.line((x + 3 * scale, y - 6 * scale, x + 4 * scale, y + 8 * scale), fill=(30, 30, 30), width=2)


def draw_sign(draw: ImageDraw.ImageDraw, text: str, yaw: float, width: int, height: int) -> None:
    """A white sign with black text above the horizon at ``yaw`` (PIL's built-in bitmap font)."""
    x, y = to_xy(yaw, 15.0, width, height)
    box = draw.textbbox((0, 0), text)
    w, h = box[2] - box[0], box[3] - box[1]
    for cx in _wrapped_xs(x, w / 2 + 3, width):
        draw.rectangle((cx - w / 2 - 3, y - h / 2 - 3, cx + w / 2 + 3, y + h / 2 + 3), fill=(250, 250, 250))
        draw.text((cx - w / 2 - box[0], y - h / 2 - box[1]), text, fill=(0, 0, 0))

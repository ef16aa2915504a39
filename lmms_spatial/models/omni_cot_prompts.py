"""Omni-CoT prompts, versioned (:data:`PROMPT_VERSION` is logged with every artefact).

The paper's Figure 15 ("Prompts adopted in Omni-CoT") did not survive text extraction, so these
are reconstructions from sec. 5.1: step 1 captions each of six 90° views and puts the captions
with their orientation into the prompt as text; step 2 asks for boxes on the ERP (normalised
``x1, y1, x2, y2``) and then a yes/no relevance answer per NFoV crop; step 3 asks again with the
ERP, the captions, the kept crops with their directions and the previous answer. The task's own
question text (ODI-Bench's ``build_prompt``: prefix, question, options, answer format) always
ends the answering prompts, so the answer format and scoring are the task's.

Change any text here -> bump :data:`PROMPT_VERSION` (the stage cache is keyed by prompt text anyway).
"""

from __future__ import annotations

PROMPT_VERSION = "omni_cot/1"

CAPTION = (
    "This image is the {view} view ({fov:g}° field of view) of a 360-degree panoramic image, seen from the "
    "camera position. Describe in two or three sentences the objects, people and text visible in this view "
    "and where they are in it."
)

VIEWPOINT_HEADER = (
    "The panorama seen from the camera position, described view by view (front is the centre of the "
    "ERP-formatted image, right is three quarters across it, back is at its left and right edges, left is "
    "one quarter across it):"
)
VIEWPOINT_LINE = "{View} view: {caption}"

GROUNDING = (
    "Here is an ERP-formatted 360-degree panoramic image and a question about it.\n"
    "Question: {question}\n"
    "Give the bounding boxes of at most {max_crops} image regions that are most relevant to answering the "
    "question, as a JSON list [[x1, y1, x2, y2], ...] with coordinates normalised to [0, 1] (x from the left "
    "edge, y from the top edge of the image). Answer [] if no region helps."
)

RELEVANCE = (
    "This image is a crop of a 360-degree panoramic image, looking {direction} (yaw {theta:.0f}°, pitch "
    "{phi:.0f}°, field of view {fov:.0f}°).\n"
    "Question: {question}\n"
    "Is this crop relevant to answering the question? Answer ONLY with yes or no."
)

REFINE_HEADER = "Crops of the panorama that may help, in the order of the images after the ERP-formatted image:"
REFINE_LINE = "Crop {i}: looking {direction} (yaw {theta:.0f}°, pitch {phi:.0f}°, field of view {fov:.0f}°)"
REFINE_PREVIOUS = "Your previous answer was: {previous}\nRethink your answer using the crops and the view descriptions."

MULTIVIEW_HEADER = (
    "The 360-degree panorama is shown as {n} perspective views ({fov:g}° field of view), each labelled with "
    "its direction (yaw: 0° front, +90° right, 180° back, −90° left; pitch: + up, − down)."
)
MULTIVIEW_LINE = "{View} view (yaw {yaw:g}°, pitch {pitch:g}°):"

VIDEO_HEADER = (
    "The 360-degree panorama is shown as a video of {n} frames ({fps:g} frames per second, {duration:g} s) that "
    "turns from the front to the right, back, left and front again, then looks up to the top and down to the "
    "bottom."
)

"""Writes docs/gallery/: every app run on its bundled photos (as `polyimage run APP -o ...`
does), the inputs and outputs as JPEG, and docs/gallery.md listing them.
Run from the repository root: python docs/make_gallery.py [APP ...]; given apps, only those
run again (and any app whose picture is missing), the others keep their pictures."""

import sys
from pathlib import Path

import numpy as np

from polyimage.apps import APP_NAMES, app_descriptions
from polyimage.apps.inputs import bundled
from polyimage.commands.runner import run_app
from polyimage.io import load_image, save_image

DOCS = Path(__file__).resolve().parent
GALLERY = DOCS / "gallery"


def _as_jpeg(source: Path, target: Path) -> None:
    image = load_image(source)
    if image.dtype != np.uint8:  # 16-bit photos, shown at 8 bits
        image = (image >> 8).astype(np.uint8)
    save_image(target, image)


def _figure_table(figures) -> list:
    """Markdown lines of one table row of images, each captioned in the header above it (a
    row does not wrap, as loose images do)."""
    return [
        "| " + " | ".join(caption for caption, _ in figures) + " |",
        "|" + "---|" * len(figures),
        "| " + " | ".join(f"![{c}]({path}){{ width=200 }}" for c, path in figures) + " |",
    ]


def main(names=()) -> None:
    GALLERY.mkdir(exist_ok=True)
    unknown = set(names) - set(APP_NAMES)
    if unknown:
        raise SystemExit(
            f"unknown app(s) {', '.join(sorted(unknown))}; apps: {', '.join(APP_NAMES)}"
        )
    catalog = app_descriptions()
    lines = [
        "# Gallery",
        "",
        "Every app on its bundled photos, as `polyimage run APP -o out.png` writes it "
        "(made by `python docs/make_gallery.py`).",
        "",
    ]
    for name in APP_NAMES:
        description, photos = catalog[name]
        shown = GALLERY / f"{name}.jpg"
        if not names or name in names or not shown.exists():
            output = GALLERY / f"{name}.png"
            run_app(name, output=str(output), runs=1, report=lambda text: None)
            _as_jpeg(output, shown)
            output.unlink()
        inputs = []
        for photo in photos:
            target = GALLERY / f"input-{Path(photo).stem}.jpg"
            if not target.exists():
                _as_jpeg(bundled(photo), target)
            inputs.append((f"input: {photo}", f"gallery/{target.name}"))
        lines += [
            f"## {name}",
            "",
            f"{description[0].upper()}{description[1:]}.",
            "",
            *_figure_table([*inputs, (f"output of {name}", f"gallery/{shown.name}")]),
            "",
        ]
    (DOCS / "gallery.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])

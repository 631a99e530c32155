"""The documentation site as a reader sees it: built with `mkdocs build --strict` (the docs
extra; .ci/run runs this file after installing it), its API page shows every public call with
its signature and its parameters as a list, and sends nobody to the package's internals;
every line of code on every page fits the text column; the docstrings are of one style."""

import html
import re
import subprocess
import sys

import pytest
from helpers import ROOT

# the characters of the code font across the text column of the material theme in a window
# 1280 pixels wide (both sidebars shown), measured in Chromium: 656 pixels of code at 8.2
# pixels a character (13.6-pixel monospace); a wider line scrolls sideways
CODE_COLUMNS = 80

# the classes on the API page that polyimage makes and a reader uses, never constructs: a
# compiled pipeline, the records of a compile and of a measurement, a border (made by
# repeat_edge and the others), a schedule (from pipe.schedule or Schedule.parse), the
# reduction operators (an enum); each shows no constructor and names what makes it. The
# errors and warnings are raised, not constructed, likewise.
MADE_BY_POLYIMAGE = {
    "Pipeline",
    "BackgroundPipeline",
    "MeasuredPipeline",
    "Trial",
    "Compiled",
    "Request",
    "Border",
    "Schedule",
    "Op",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    # without ruff (or black) the long signatures stay one line; mkdocstrings says so
    assert "Formatting signatures requires" not in built.stderr
    return folder


def _text(markup: str) -> str:
    """`markup` as a reader reads it: tags dropped, entities decoded, whitespace one space."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", markup)))


@pytest.fixture(scope="module")
def api_page(site):
    return (site / "api" / "index.html").read_text()


@pytest.fixture(scope="module")
def api_text(api_page):
    return _text(api_page)


def _documented(page: str) -> list:
    """(kind, name, signature, own part) of every object the API page documents: its heading's
    kind (class, function, attribute, module), its name as the heading shows it, its signature
    as text ("" where none is shown) and the page from its heading to the next one (a class's
    own part ends where its members begin)."""
    heading = re.compile(
        r'<h[2-6] id="([^"]+)" class="doc doc-heading">.*?doc-(\w+)-name">([^<]*)<', re.S
    )
    found = list(heading.finditer(page))
    objects = []
    for k, match in enumerate(found):
        end = found[k + 1].start() if k + 1 < len(found) else len(page)
        part = page[match.end() : end]
        signature = re.search(r'<div class="doc-signature[^"]*">(.*?)</div>', part, re.S)
        shown = _text(signature.group(1)).strip() if signature else ""
        objects.append((match.group(2), match.group(3), shown, part))
    return objects


def _parameters(signature: str) -> list:
    """The parameter names of a signature shown as text, `self` left out."""
    inside = signature[signature.find("(") + 1 : signature.rfind(")")]
    names = [re.sub(r"[=:].*", "", p).strip(" *") for p in inside.split(",")]
    return [n for n in names if n and n not in ("self", "/")]


def test_compile_shows_its_signature_and_each_parameter(api_text):
    assert "compile ( outputs , estimates = None , constraints = ()" in api_text
    listed = api_text[api_text.index("Compile the pipeline computing") :][:4000]
    for name in ("estimates", "schedule", "options", "weights", "march", "build"):
        # one entry of the parameter list each, with its type and default where annotated
        assert re.search(rf" {name} (\([^–]*\) )?–", listed), name


def test_the_public_objects_are_on_the_api_page(api_text):
    for name in ("Pipeline", "BackgroundPipeline", "interpret", "Schedule", "load"):
        assert f" {name} " in api_text, name
    for name in ("Parameter", "Variable", "Condition", "Select", "Clamp", "Interval"):
        assert f" {name} " in api_text, name
    for call in ("load_image (", "save_image (", "bundled_photo ("):
        assert call in api_text, call
    interval = api_text[api_text.index("The inclusive range") :][:1500]
    assert "lb –" in interval and "ub –" in interval  # not only PolyMage's lowerBound


def test_no_docstring_on_the_api_page_names_an_internal_file(api_text):
    internal = re.findall(
        r"\b\w+\.py\b|\b(?:codegen|jit|poly|graph\.dag|schedule\.\w+)\.\w+", api_text
    )
    assert internal == []


def test_every_public_call_shows_its_signature_and_a_parameters_list(api_page):
    """Each function, method and constructor on the API page that takes arguments shows them
    in its signature and lists each in a Parameters section; every class but those polyimage
    makes shows how to construct it."""
    objects = _documented(api_page)
    unlisted, unsigned, missing = [], [], []
    for kind, name, signature, part in objects:
        if kind not in ("class", "function"):
            continue
        made_for_you = name in MADE_BY_POLYIMAGE or name.endswith(("Error", "Warning"))
        if not signature:
            if kind == "function" or not made_for_you:
                unsigned.append(name)
            continue
        parameters = _parameters(signature)
        if parameters and "Parameters:" not in part:
            unlisted.append(name)
            continue
        section = part[part.find("Parameters:") :].split("</ul>")[0]
        listed = f" {_text(section).replace('*', '')} "  # *images, **arguments
        missing += [f"{name}: {p}" for p in parameters if f" {p} " not in listed]
    assert len(objects) > 80  # the page was parsed
    assert unsigned == [], f"no signature shown: {unsigned}"
    assert unlisted == [], f"arguments without a Parameters list: {unlisted}"
    assert missing == [], f"parameters left out of the list: {missing}"


def test_the_dsl_constructors_show_their_signatures(api_text):
    for signature in (
        "Image ( typ , name , extents )",
        # its two spellings, the type checkers' overloads
        "Function ( domain : Domain , typ : TypeLike , name : str , hint : str = '' )",
        "Function ( variables : Sequence [ Variable ], intervals : Sequence [ Interval ],",
        "Reduction ( var_dom , red_dom , typ , name )",
        "Interval ( typ , lb , ub )",
        "Parameter ( typ , name )",
        "Variable ( typ , name )",
        "Condition ( lhs , op , rhs )",
        "Select ( cond , a , b )",
        "Cast ( typ , a )",
        "Case ( cond , value )",
        "Reduce ( target , value , op )",
    ):
        assert signature in api_text, signature


def test_compile_returns_one_documented_value(api_text):
    """The Returns section of compile has one entry, the compiled pipeline (a description
    wrapped without indentation once rendered as two bogus entries)."""
    returns = api_text[api_text.index("Compile the pipeline computing") :]
    returns = returns[returns.index("Returns:") : returns.index("Raises:")]
    assert returns.count(" – ") == 1, returns


def test_no_code_line_is_wider_than_the_text_column(site):
    """Every line of every code block on the site (the API page's signatures included) fits
    the text column at a 1280-pixel window, so no block scrolls sideways."""
    wide = []
    for page in sorted(site.rglob("*.html")):
        for block in re.findall(r"<pre\b[^>]*>(.*?)</pre>", page.read_text(), re.S):
            code = html.unescape(re.sub(r"<[^>]+>", "", block))
            wide += [
                f"{page.relative_to(site).parent}: {line}"
                for line in code.split("\n")
                if len(line) > CODE_COLUMNS
            ]
    assert wide == [], "\n".join(wide)


def test_inline_code_keeps_its_hyphenated_words_whole(site):
    """Chromium breaks a line after any hyphen, `--name` into "-" and "-name": the site's hook
    (docs/hooks.py) keeps each hyphenated word of inline code on one line."""
    page = (site / "deploying" / "index.html").read_text()
    assert '<code><span style="white-space: nowrap">--name</span></code>' in page
    page = (site / "getting-started" / "index.html").read_text()
    assert '<code>pip install <span style="white-space: nowrap">-e</span> .</code>' in page


def test_the_docstrings_are_google_style():
    """mkdocstrings renders Google style (mkdocs.yml): a NumPy-style section (a title
    underlined with dashes) or a reST field would show as a run-on paragraph."""
    numpy_section = re.compile(r"^\s*[A-Z][a-z ]+\n\s*-{3,}\s*$", re.M)
    rest_field = re.compile(r"^\s*:(?:param|returns?|raises?|type|rtype)\b", re.M)
    offenders = []
    for path in sorted((ROOT / "polyimage").rglob("*.py")):
        text = path.read_text()
        for docstring in re.findall(r'"""(.*?)"""', text, re.S):
            if numpy_section.search(docstring) or rest_field.search(docstring):
                offenders.append(f"{path.relative_to(ROOT)}: {docstring.strip()[:60]!r}")
    assert offenders == [], "\n".join(offenders)

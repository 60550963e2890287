"""What the Lambda manifest (functions/reelgate-lambda/src/functions.rs) says, for the scripts
that measure its binaries (lambda-artifacts.sh, bench-cold-start.py, cost-model.py): which
functions share a bootstrap, and which serve HTTP. Read from the source text, so a table measured
at an older commit can be read with that commit's manifest."""

import re
from pathlib import Path

MANIFEST = "functions/reelgate-lambda/src/functions.rs"


def manifest_text(repo=".", commit=None):
    """The manifest as it is in the working tree or, given a commit, as it was there (None when
    that commit has no manifest)."""
    if commit is None:
        return (Path(repo) / MANIFEST).read_text()
    import subprocess
    shown = subprocess.run(["git", "show", f"{commit}:{MANIFEST}"], cwd=repo,
                           capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def constant_name(constant):
    """A manifest constant's function name (`API_VIDEO_ITEM` is `api-video-item`)."""
    return constant.lower().replace("_", "-")


def shared_bootstraps(text):
    """{bootstrap binary: [its member functions' names]}: the `SharedBootstrap` constants, or,
    in a manifest from before them, the `PIPELINE` list that the `pipeline` binary ran."""
    found = {
        binary: [constant_name(c) for c in re.findall(r"\b[A-Z][A-Z0-9_]+\b", members)]
        for binary, members in re.findall(
            r'=\s*SharedBootstrap\s*\{\s*binary:\s*"([a-z0-9-]+)",\s*members:\s*&\[(.*?)\]', text, re.S)
    }
    if not found:
        old = re.search(r"pub const PIPELINE: &\[LambdaFunction\] = &\[(.*?)\];", text, re.S)
        if old:
            found["pipeline"] = [constant_name(c) for c in re.findall(r"\b[A-Z][A-Z0-9_]+\b", old.group(1))]
    return found


def bootstrap_of(text):
    """{function name: the binary it runs} for the members of shared bootstraps."""
    return {m: b for b, members in shared_bootstraps(text).items() for m in members}


def http_functions(text):
    """The names of the functions that serve HTTP (an API path, or a part of the console)."""
    body = text[text.index("manifest! {"):]
    names = set()
    for entry in body.split(";"):
        name = re.search(r'"([a-z0-9-]+)"', entry)
        if name and re.search(r"=\s*(http|streamed)\(|Serves::Console", entry):
            names.add(name.group(1))
    return names


def http_bootstraps(text):
    """The binaries that serve HTTP: an HTTP function's own, or a shared bootstrap of one."""
    http = http_functions(text)
    shared = bootstrap_of(text)
    return {shared.get(f, f) for f in http}

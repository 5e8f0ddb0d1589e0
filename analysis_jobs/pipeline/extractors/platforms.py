"""
Where a repository runs: GitHub Actions workflows and the repository's own actions, Kubernetes manifests and
Helm charts, and what a Terraform configuration's lockfile pins (``.terraform.lock.hcl``).

YAML is read with PyYAML's safe composer, whose nodes keep their line marks (an alias is its anchor's node, and
each node is visited once). A Helm template is not YAML until rendered: its directive lines are dropped and each
``{{ ... }}`` becomes a placeholder, so its kinds, names and literal images are still read; a value left to the
template is not reported. HCL is read with tree-sitter-hcl, as the Terraform extractor (``iac``) does.
"""

import re

import yaml

from .base import Extractor
from .iac import end_line, grammar_parser, hcl_attributes, hcl_blocks, hcl_body, hcl_label, hcl_string, provider_name

VERSION = "1"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PLACEHOLDER = "~template~"
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _values(node) -> dict:
    """A mapping node's ``{key text: value node}`` (any other node has none)."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {key.value: value for key, value in node.value if isinstance(key, yaml.ScalarNode)}


def _scalar(node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _line(node) -> int:
    return node.start_mark.line + 1


# -- GitHub Actions ------------------------------------------------------------------------------------------


def _image(value) -> str | None:
    """A job's ``container``/service: an image string, or a mapping with one."""
    text = _scalar(value)
    return text if text is not None else _scalar(_values(value).get("image"))


def extract_workflow(data: bytes) -> dict:
    """Jobs (with their spans), the actions their steps use at their pinned ref, and their container images."""
    jobs, actions, images, lines = [], [], [], data.split(b"\n")
    workflow = _values(yaml.compose(data, Loader=LOADER))
    jobs_node = workflow.get("jobs")
    for key, body in jobs_node.value if isinstance(jobs_node, yaml.MappingNode) else ():
        name, fields = key.value, _values(body)
        jobs.append([name, _scalar(fields.get("runs-on")) or "", _line(key), end_line(lines, body.end_mark)])
        if (reusable := _scalar(fields.get("uses"))) is not None:
            actions.append([reusable, name, _line(fields["uses"])])  # a reusable workflow
        if (image := _image(fields.get("container"))) is not None:
            images.append([image, name, _line(fields["container"])])
        for _service, definition in _values(fields.get("services")).items():
            if (image := _image(definition)) is not None:
                images.append([image, name, _line(definition)])
        steps = fields.get("steps")
        for step in steps.value if isinstance(steps, yaml.SequenceNode) else ():
            uses = _values(step).get("uses")
            if (action := _scalar(uses)) is not None:
                if action.startswith("docker://"):
                    images.append([action.removeprefix("docker://"), name, _line(uses)])
                else:
                    actions.append([action, name, _line(uses)])
    return {"jobs": jobs, "actions": actions, "job_images": images}


def extract_action(data: bytes) -> dict:
    """A repository's own action (its ``action.yml``): how it runs, the actions a composite action's steps use at
    their pinned ref, and the images it runs (a step's or a Docker action's ``docker://``). A YAML file with no
    ``runs`` is not an action and gives nothing."""
    definition = _values(yaml.compose(data, Loader=LOADER))
    runs = definition.get("runs")
    if not isinstance(runs, yaml.MappingNode):
        return {}
    fields, actions, images = _values(runs), [], []
    steps = fields.get("steps")
    for step in steps.value if isinstance(steps, yaml.SequenceNode) else ():
        uses = _values(step).get("uses")
        if (action := _scalar(uses)) is not None:
            (images if action.startswith("docker://") else actions).append([action.removeprefix("docker://"), _line(uses)])
    image = _scalar(fields.get("image"))
    if image is not None and image.startswith("docker://"):  # else the Dockerfile beside it, a file of its own
        images.append([image.removeprefix("docker://"), _line(fields["image"])])
    return {"action": _scalar(fields.get("using")) or "", "action_uses": actions, "action_images": images}


# -- Kubernetes and Helm -------------------------------------------------------------------------------------

_DIRECTIVE = re.compile(rb"^\s*\{\{-?\s*(?:if|else|end|range|with|define|template|include|/\*|-?\s*\$)[^\n]*\}\}\s*$", re.MULTILINE)
_ACTION = re.compile(rb"\{\{.*?\}\}")


def _untemplated(data: bytes) -> bytes:
    """A Helm template made parseable: directive lines blanked (no line moves), each action a placeholder."""
    if b"{{" not in data:
        return data
    return _ACTION.sub(PLACEHOLDER.encode(), _DIRECTIVE.sub(b"", data))


def _containers(node, seen: set) -> list:
    """Every container mapping under ``node`` (a pod spec, a template, a CronJob's job template...)."""
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                if _scalar(key) in CONTAINER_LISTS and isinstance(value, yaml.SequenceNode):
                    found.extend(item for item in value.value if isinstance(item, yaml.MappingNode))
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    return found


def extract_kubernetes(data: bytes) -> dict:
    """Each document with an ``apiVersion`` and a ``kind``: the object, and the images of its containers.

    A YAML file that is not a Kubernetes object gives nothing; a template that still does not parse gives
    nothing either (it is not YAML until rendered), while plain YAML that does not parse is a diagnostic.
    """
    templated = b"{{" in data
    try:
        documents = list(yaml.compose_all(_untemplated(data), Loader=LOADER))
    except yaml.YAMLError:
        if templated:
            return {"objects": [], "object_images": []}
        raise
    placeholder, lines = PLACEHOLDER, data.split(b"\n")
    objects, images = [], []
    for document in documents:
        fields = _values(document)
        kind, api = _scalar(fields.get("kind")), _scalar(fields.get("apiVersion"))
        if not kind or not api:
            continue
        metadata = _values(fields.get("metadata"))
        name = _scalar(metadata.get("name")) or ""
        namespace = _scalar(metadata.get("namespace")) or ""
        label = "/".join((kind, namespace, name.replace(placeholder, "*")))
        objects.append([kind, name.replace(placeholder, "*"), namespace.replace(placeholder, "*"), api, _line(document), end_line(lines, document.end_mark)])
        for container in _containers(document, set()):
            image = _values(container).get("image")
            if (text := _scalar(image)) and placeholder not in text:
                images.append([text, label, _line(image)])
    return {"objects": objects, "object_images": images}


def extract_helm_chart(data: bytes) -> dict:
    """``Chart.yaml``: the chart itself and the charts it depends on (declared as ``dep:helm:NAME``)."""
    chart = _values(yaml.compose(data, Loader=LOADER))
    declared = []
    dependencies = chart.get("dependencies")
    for entry in dependencies.value if isinstance(dependencies, yaml.SequenceNode) else ():
        fields = _values(entry)
        if name := _scalar(fields.get("name")):
            declared.append(["helm", name, _scalar(fields.get("version")) or "", "main", _line(entry)])
    name = _scalar(chart.get("name")) or ""
    return {"declared": declared, "locked": [], "chart": [name, _scalar(chart.get("version")) or ""],
            "provides": [["helm", name]] if name else []}


# -- Terraform's lockfile ------------------------------------------------------------------------------------


def extract_terraform_lock(data: bytes) -> dict:
    root = grammar_parser("hcl").parse(data).root_node
    body = next((child for child in root.named_children if child.type == "body"), None)
    locked = []
    for provider in hcl_blocks(body, "provider"):
        labels = [part for part in provider.named_children[1:] if part.type == "string_lit"]
        version = hcl_attributes(hcl_body(provider)).get("version")
        if labels and version is not None:
            locked.append(["terraform", provider_name(hcl_label(labels[0])), hcl_string(version[0]) or "", provider.start_point.row + 1, None])
    if root.has_error:
        raise ValueError("the lockfile is not valid HCL")
    return {"declared": [], "locked": locked}


WORKFLOW = Extractor("github-actions", VERSION, extract_workflow)
ACTION = Extractor("github-action", VERSION, extract_action)
KUBERNETES = Extractor("kubernetes", VERSION, extract_kubernetes)
HELM_CHART = Extractor("helm-chart", "2", extract_helm_chart)  # 2: provides
TERRAFORM_LOCK = Extractor("terraform-lock", VERSION, extract_terraform_lock)

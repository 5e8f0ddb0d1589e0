"""
Infrastructure as code: Dockerfile base images, docker-compose services and their images, Terraform blocks.

Dockerfiles and Terraform are read with tree-sitter grammars (the same runtime as JavaScript, with line spans);
compose files with PyYAML's safe composer, whose nodes carry their marks.
"""

import functools
import warnings

from .base import Extractor

DOCKERFILE_VERSION = "2"  # 2: a file without a final newline parses cleanly
COMPOSE_VERSION = "1"
TERRAFORM_VERSION = "1"
TERRAFORM_BLOCKS = {"resource", "data", "module", "provider"}


@functools.cache
def _parser(grammar: str):
    import tree_sitter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # these grammars still hand the runtime a bare pointer
        if grammar == "dockerfile":
            import tree_sitter_dockerfile as module
        else:
            import tree_sitter_hcl as module
        return tree_sitter.Parser(tree_sitter.Language(module.language()))


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def _first_error_line(root) -> int:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node.start_point.row + 1
        if node.has_error:
            stack.extend(reversed(node.children))
    return 1


def extract_dockerfile(data: bytes) -> dict:
    # The grammar wants every instruction to end with a newline; one added after the last line moves no line.
    root = _parser("dockerfile").parse(data if data.endswith(b"\n") else data + b"\n").root_node
    images, stages = [], set()
    for instruction in root.named_children:
        if instruction.type != "from_instruction":
            continue
        spec = next((child for child in instruction.named_children if child.type == "image_spec"), None)
        alias = next((child for child in instruction.named_children if child.type == "image_alias"), None)
        if spec is not None:
            image = _text(spec).strip()
            if image.lower() != "scratch" and image not in stages:
                images.append([image, instruction.start_point.row + 1, _text(alias) if alias is not None else ""])
        if alias is not None:
            stages.add(_text(alias))
    result = {"images": images}
    if root.has_error:
        result["error"] = ["Dockerfile syntax error", _first_error_line(root)]
    return result


def extract_compose(data: bytes) -> dict:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.compose(data, Loader=loader)
    lines = data.split(b"\n")
    services = []
    if isinstance(document, yaml.MappingNode):
        for key, value in document.value:
            if key.value != "services" or not isinstance(value, yaml.MappingNode):
                continue
            for name, body in value.value:
                image, build = "", ""
                if isinstance(body, yaml.MappingNode):
                    for field, setting in body.value:
                        if field.value == "image" and isinstance(setting, yaml.ScalarNode):
                            image = str(setting.value)
                        elif field.value == "build":
                            build = str(setting.value) if isinstance(setting, yaml.ScalarNode) else "."
                services.append([str(name.value), image, build, name.start_mark.line + 1, _end_line(lines, body.end_mark)])
    return {"services": services}


def _end_line(lines, mark) -> int:
    """Return the 1-based last line of a node whose end mark is ``mark`` (a block ends where the next begins)."""
    text = lines[mark.line] if mark.line < len(lines) else b""
    return mark.line if not text[: mark.column].strip() else mark.line + 1


def _label(node) -> str:
    text = _text(node)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def extract_terraform(data: bytes) -> dict:
    root = _parser("hcl").parse(data).root_node
    blocks = []
    body = next((child for child in root.named_children if child.type == "body"), None)
    for block in body.named_children if body is not None else ():
        if block.type != "block":
            continue
        parts = [child for child in block.named_children if child.type in ("identifier", "string_lit")]
        if not parts or _text(parts[0]) not in TERRAFORM_BLOCKS:
            continue
        kind, labels = _text(parts[0]), [_label(part) for part in parts[1:]]
        source = ""
        if kind == "module":
            inner = next((child for child in block.named_children if child.type == "body"), None)
            for attribute in inner.named_children if inner is not None else ():
                if attribute.type == "attribute" and attribute.named_children and _text(attribute.named_children[0]) == "source":
                    source = _label(attribute.named_children[-1]).strip('"')
        blocks.append([kind, labels[0] if labels else "", labels[1] if len(labels) > 1 else "", source,
                       block.start_point.row + 1, block.end_point.row + 1])
    result = {"blocks": blocks}
    if root.has_error:
        result["error"] = ["Terraform syntax error", _first_error_line(root)]
    return result


DOCKERFILE = Extractor("dockerfile", DOCKERFILE_VERSION, extract_dockerfile)
COMPOSE = Extractor("compose", COMPOSE_VERSION, extract_compose)
TERRAFORM = Extractor("terraform", TERRAFORM_VERSION, extract_terraform)

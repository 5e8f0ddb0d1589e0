"""
Infrastructure as code: Dockerfile base images, docker-compose services and their images, Terraform blocks
(resources, data, modules, providers, variables, outputs) and what the configuration requires (providers with
their constraints, registry modules with their versions), as declared dependencies.

Dockerfiles and Terraform are read with tree-sitter grammars (the same runtime as JavaScript, with line spans);
compose files with PyYAML's safe composer, whose nodes carry their marks.
"""

import functools
import re
import warnings

from .base import Extractor, first_syntax_error

# 2: a file without a final newline parses cleanly; 3: ARG defaults put in; 4: COPY --from and RUN --mount images
DOCKERFILE_VERSION = "4"
COMPOSE_VERSION = "2"  # 2: a build's context and Dockerfile, from the short and the long syntax
TERRAFORM_VERSION = "2"  # 2: variables, outputs, required providers and registry modules
TERRAFORM_BLOCKS = {"resource", "data", "module", "provider", "variable", "output"}


@functools.cache
def grammar_parser(grammar: str):
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
    error = first_syntax_error(root)
    return error.start_point.row + 1 if error is not None else 1


_EXPANSION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _arg(instruction) -> tuple[str, str | None]:
    """Return an ``ARG`` instruction's name and default (None when it has none)."""
    parts = instruction.named_children
    name = _text(parts[0]) if parts else ""
    if len(parts) < 2:
        return name, None
    default = _text(parts[1])
    if parts[1].type in ("double_quoted_string", "single_quoted_string"):
        default = default[1:-1]
    return name, default


def _expanded(text: str, defaults: dict[str, str | None]) -> str:
    """Return ``text`` with the global ``ARG`` defaults put in, as a build without ``--build-arg`` sees it.

    ``${NAME:-word}`` is ``word`` where NAME has no value, ``${NAME:+word}`` ``word`` where it has one. ``text``
    as it is when a variable has no default: only the build that sets it knows the image.
    """
    unknown = False

    def value(match):
        nonlocal unknown
        name, operator, word = match.group(1) or match.group(4), match.group(2), match.group(3)
        known = defaults.get(name)
        if operator == "-":
            return known or word
        if operator == "+":
            return word if known else ""
        if known is None:
            unknown = True
            return ""
        return known

    expanded = _EXPANSION.sub(value, text)
    return text if unknown else expanded


def _copied_from(instruction) -> tuple[str, str] | None:
    """Return the image ``COPY --from=IMAGE`` or ``RUN --mount=...,from=IMAGE`` reads files from, and how, or None."""
    if instruction.type == "copy_instruction":
        for param in instruction.named_children:
            if param.type == "param" and _text(param).startswith("--from="):
                return _text(param).removeprefix("--from="), "COPY --from"
    elif instruction.type == "run_instruction":
        for mount in instruction.named_children:
            for value in mount.named_children if mount.type == "mount_param" else ():
                if _text(value).startswith("from="):
                    return _text(value).removeprefix("from="), "RUN --mount"
    return None


def extract_dockerfile(data: bytes) -> dict:
    """Each stage's base image, with the ``ARG`` defaults declared before the first ``FROM`` put in (the only
    ones a ``FROM`` sees); an image that names an earlier stage, or ``scratch``, is none. An image a stage copies
    or mounts files from (``COPY --from=ghcr.io/astral-sh/uv /uv /bin/``) is used too, in ``copied_images``."""
    # The grammar wants every instruction to end with a newline; one added after the last line moves no line.
    root = grammar_parser("dockerfile").parse(data if data.endswith(b"\n") else data + b"\n").root_node
    images, copied, stages, defaults, global_scope, stage = [], [], set(), {}, True, ""
    for instruction in root.named_children:
        source = _copied_from(instruction)
        # A stage by name or index is no image; a variable there is the stage's ARG, whose value only a build knows.
        if source is not None and source[0].lower() not in stages and not source[0].isdigit() and "$" not in source[0]:
            copied.append([source[0], instruction.start_point.row + 1, stage, source[1]])
        if instruction.type == "arg_instruction" and global_scope:
            name, default = _arg(instruction)
            defaults[name] = default
        if instruction.type != "from_instruction":
            continue
        global_scope = False
        spec = next((child for child in instruction.named_children if child.type == "image_spec"), None)
        alias = next((child for child in instruction.named_children if child.type == "image_alias"), None)
        if spec is not None:
            written = _text(spec).strip()
            image = _expanded(written, defaults) if "$" in written else written
            if image.lower() != "scratch" and image.lower() not in stages:
                row = [image, instruction.start_point.row + 1, _text(alias) if alias is not None else ""]
                images.append(row + [written] if image != written else row)
        stage = _text(alias) if alias is not None else ""
        if stage:
            stages.add(stage.lower())  # stage names compare without case
    result = {"images": images, "copied_images": copied}
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
                image, build, dockerfile = "", "", ""
                if isinstance(body, yaml.MappingNode):
                    for field, setting in body.value:
                        if field.value == "image" and isinstance(setting, yaml.ScalarNode):
                            image = str(setting.value)
                        elif field.value == "build":
                            build, dockerfile = _compose_build(setting)
                services.append([str(name.value), image, build, name.start_mark.line + 1, end_line(lines, body.end_mark), dockerfile])
    return {"services": services}


def _compose_build(setting) -> tuple[str, str]:
    """Return a service's build context and the Dockerfile in it (``build: ./api``, or ``build: {context: ./api,
    dockerfile: Dockerfile.prod}``); no Dockerfile for an inline one (``dockerfile_inline``)."""
    import yaml

    if isinstance(setting, yaml.ScalarNode):
        return str(setting.value), "Dockerfile"
    fields = {str(field.value): child for field, child in setting.value}

    def scalar(name: str, default: str) -> str:
        return str(fields[name].value) if isinstance(fields.get(name), yaml.ScalarNode) else default

    return scalar("context", "."), "" if "dockerfile_inline" in fields else scalar("dockerfile", "Dockerfile")


def end_line(lines, mark) -> int:
    """Return the 1-based last line of a node whose end mark is ``mark`` (a block ends where the next begins)."""
    text = lines[mark.line] if mark.line < len(lines) else b""
    return mark.line if not text[: mark.column].strip() else mark.line + 1


def hcl_label(node) -> str:
    text = _text(node)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def hcl_blocks(body, kind: str):
    for block in body.named_children if body is not None else ():
        if block.type == "block" and block.named_children and _text(block.named_children[0]) == kind:
            yield block


def hcl_body(block):
    return next((child for child in block.named_children if child.type == "body"), None)


def hcl_attributes(body) -> dict:
    """``{name: (expression node, line)}`` of a body's attributes."""
    found = {}
    for attribute in body.named_children if body is not None else ():
        if attribute.type == "attribute" and len(attribute.named_children) >= 2:
            found[_text(attribute.named_children[0])] = (attribute.named_children[-1], attribute.start_point.row + 1)
    return found


def hcl_string(expression) -> str | None:
    text = _text(expression).strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' and "${" not in text else None


def _object_fields(expression) -> dict:
    """An HCL object expression's ``{key: value text}`` (strings unquoted)."""
    fields = {}
    for element in _descendants(expression, "object_elem"):
        key, value = element.named_children[0], element.named_children[-1]
        fields[_text(key).strip().strip('"')] = hcl_string(value) or _text(value).strip()
    return fields


def _descendants(node, kind: str):
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            yield current
            continue
        stack.extend(reversed(current.named_children))


def provider_name(source: str) -> str:
    """A provider source as the registry names it: ``hashicorp/aws`` (the default host dropped, lower case)."""
    return source.lower().removeprefix("registry.terraform.io/")


def _requirements(body) -> list:
    """``required_providers`` (a bare name means ``hashicorp/NAME``) and registry ``module`` sources with versions,
    as declared rows: ``dep:terraform:hashicorp/aws``, ``dep:terraform:module:terraform-aws-modules/vpc/aws``."""
    declared = []
    for terraform in hcl_blocks(body, "terraform"):
        for required in hcl_blocks(hcl_body(terraform), "required_providers"):
            for local, (expression, line) in sorted(hcl_attributes(hcl_body(required)).items()):
                fields = _object_fields(expression) if expression.type != "literal_value" else {"version": hcl_string(expression) or ""}
                source = fields.get("source") or f"hashicorp/{local}"
                declared.append(["terraform", provider_name(source), fields.get("version", ""), "provider", line])
    for module in hcl_blocks(body, "module"):
        attributes = hcl_attributes(hcl_body(module))
        source = hcl_string(attributes["source"][0]) if "source" in attributes else None
        if source and "version" in attributes and not source.startswith((".", "/")) and "::" not in source:
            declared.append(["terraform", f"module:{source.lower()}", hcl_string(attributes["version"][0]) or "", "module", attributes["source"][1]])
    return declared


def extract_terraform(data: bytes) -> dict:
    root = grammar_parser("hcl").parse(data).root_node
    blocks = []
    body = next((child for child in root.named_children if child.type == "body"), None)
    for block in body.named_children if body is not None else ():
        if block.type != "block":
            continue
        parts = [child for child in block.named_children if child.type in ("identifier", "string_lit")]
        if not parts or _text(parts[0]) not in TERRAFORM_BLOCKS:
            continue
        kind, labels = _text(parts[0]), [hcl_label(part) for part in parts[1:]]
        source = ""
        if kind == "module":
            inner = next((child for child in block.named_children if child.type == "body"), None)
            for attribute in inner.named_children if inner is not None else ():
                if attribute.type == "attribute" and attribute.named_children and _text(attribute.named_children[0]) == "source":
                    source = hcl_label(attribute.named_children[-1]).strip('"')
        blocks.append([kind, labels[0] if labels else "", labels[1] if len(labels) > 1 else "", source,
                       block.start_point.row + 1, block.end_point.row + 1])
    result = {"blocks": blocks, "declared": _requirements(body), "locked": []}
    if root.has_error:
        result["error"] = ["Terraform syntax error", _first_error_line(root)]
    return result


DOCKERFILE = Extractor("dockerfile", DOCKERFILE_VERSION, extract_dockerfile)
COMPOSE = Extractor("compose", COMPOSE_VERSION, extract_compose)
TERRAFORM = Extractor("terraform", TERRAFORM_VERSION, extract_terraform)

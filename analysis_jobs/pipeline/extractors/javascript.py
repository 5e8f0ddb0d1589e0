"""
JavaScript and TypeScript with tree-sitter grammars: ``import``/``require`` edges (with how each is made:
``type_only`` for ``import type``/``export type``, ``dynamic`` for ``import("literal")``), exported symbols, and
``fetch``/``axios`` calls with a literal URL (a ``fetch`` with its ``method`` option).

Imports and calls are found by tree-sitter queries (run in C over the whole tree); exports are read from the
program's top-level statements, the only place they can be. A file that does not parse cleanly still yields
what the error-tolerant parser recovered, plus a diagnostic with the first error's line.
"""

import functools
import re
import warnings

from .base import Extractor, first_syntax_error, http_target

# 3: ``keyof readonly T[]`` parses (TypeScript's own ``lib.es2015.symbol.wellknown.d.ts`` was a parse error).
VERSION = "3"

QUERIES = """
(import_statement source: (string) @import)
(export_statement source: (string) @import)
(call_expression function: (identifier) @_fn arguments: (arguments . (string) @require) (#eq? @_fn "require"))
(call_expression function: (import) arguments: (arguments . (string) @dynamic))
(call_expression function: (identifier) @_fetch arguments: (arguments . [(string) (template_string)] @fetch) (#eq? @_fetch "fetch"))
(call_expression function: (identifier) @_axios arguments: (arguments . (_) @axios) (#eq? @_axios "axios"))
(call_expression
  function: (member_expression object: (identifier) @_ax property: (property_identifier) @axios_method)
  arguments: (arguments . (_) @axios_member)
  (#eq? @_ax "axios"))
(ERROR) @error
"""

AXIOS_METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "request", "create"}
DECLARATIONS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "function_signature": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
}


@functools.cache
def _grammar(dialect: str):
    import tree_sitter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if dialect == "javascript":
            import tree_sitter_javascript

            language = tree_sitter.Language(tree_sitter_javascript.language())
        else:
            import tree_sitter_typescript

            language = tree_sitter.Language(
                tree_sitter_typescript.language_tsx() if dialect == "tsx" else tree_sitter_typescript.language_typescript()
            )
    return tree_sitter.Parser(language), tree_sitter.Query(language, QUERIES)


def parser(dialect: str):
    """Return the tree-sitter parser of ``dialect`` (javascript, typescript or tsx) the extractor parses with."""
    return _grammar(dialect)[0]


VARIANCE = ("in", "out")
KEYOF_READONLY = re.compile(rb"\bkeyof(\s+)readonly\b")


def _parse(dialect: str, parser, data: bytes):
    """Return ``data``'s tree. tree-sitter-typescript 0.23 cannot parse ``keyof readonly T[]``; where that failed,
    the file is parsed again with each such ``readonly`` blanked, which leaves every offset and every fact the
    same (none depends on the modifier; only a string holding those very words would read differently)."""
    tree = parser.parse(data)
    if dialect != "javascript" and tree.root_node.has_error and b"readonly" in data:
        blanked = KEYOF_READONLY.sub(lambda found: b"keyof" + found[1] + b" " * len(b"readonly"), data)
        if blanked != data:
            return parser.parse(blanked)
    return tree


def _is_variance_annotation(error) -> bool:
    """Whether an error node is the parameter after TypeScript 4.7's ``in``/``out`` (``<in T, out U>``,
    ``<in out T>``): tree-sitter-typescript 0.23 takes the keyword for the parameter's name and the name for an error."""
    before = error.prev_named_sibling
    return (
        error.parent is not None and error.parent.type == "type_parameters"
        and before is not None and before.type == "type_parameter" and _text(before) in VARIANCE
        and all(child.type == "identifier" for child in error.named_children)
    )


def _fetch_method(url) -> str:
    """Return the ``method`` of ``fetch(url, {method: "POST"})`` (GET when none is given or it is not a literal)."""
    options = url.next_named_sibling
    if options is not None and options.type == "object":
        for pair in options.named_children:
            key, value = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if pair.type == "pair" and key is not None and _text(key).strip("'\"") == "method" and value is not None:
                method = _string_value(value)
                return method.upper() if method else "*"
    return "GET"


def _import_kinds(node, kind: str) -> list:
    statement = node.parent
    if kind == "dynamic":
        return ["dynamic"]
    if statement is not None and any(child.type == "type" for child in statement.children):
        return ["type_only"]
    return []


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def _string_value(node) -> str | None:
    """Return a string literal's value, or a template's literal head (enough to name a host)."""
    if node.type == "string":
        return _text(node)[1:-1]
    if node.type == "template_string":
        head = []
        for child in node.children:
            if child.type == "template_substitution":
                break
            if child.type == "string_fragment":
                head.append(_text(child))
        return "".join(head)
    return None


def _object_url(node) -> str | None:
    if node.type != "object":
        return None
    for pair in node.named_children:
        if pair.type == "pair":
            key = pair.child_by_field_name("key")
            value = pair.child_by_field_name("value")
            if key is not None and value is not None and _text(key).strip("'\"") in ("url", "baseURL"):
                return _string_value(value)
    return None


def _exports(root) -> list:
    exports = []
    for statement in root.named_children:
        line, end = statement.start_point.row + 1, statement.end_point.row + 1
        if statement.type == "export_statement":
            if any(child.type == "default" for child in statement.children):
                exports.append(["default", "default", line, end])
                continue
            declaration = statement.child_by_field_name("declaration")
            if declaration is not None:
                kind = DECLARATIONS.get(declaration.type)
                if kind is not None:
                    name = declaration.child_by_field_name("name")
                    if name is not None:
                        exports.append([_text(name), kind, line, end])
                elif declaration.type in ("lexical_declaration", "variable_declaration"):
                    for declarator in declaration.named_children:
                        name = declarator.child_by_field_name("name") if declarator.type == "variable_declarator" else None
                        if name is not None and name.type == "identifier":
                            exports.append([_text(name), "variable", line, end])
                continue
            for clause in statement.named_children:
                if clause.type == "export_clause":
                    for specifier in clause.named_children:
                        alias = specifier.child_by_field_name("alias") or specifier.child_by_field_name("name")
                        if alias is not None:
                            exports.append([_text(alias), "reexport" if statement.child_by_field_name("source") else "binding", line, end])
        elif statement.type == "expression_statement" and statement.named_children:
            exports.extend(_commonjs_exports(statement.named_children[0], line, end))
    return exports


def _commonjs_exports(expression, line, end) -> list:
    if expression.type != "assignment_expression":
        return []
    left, right = expression.child_by_field_name("left"), expression.child_by_field_name("right")
    if left is None or left.type != "member_expression":
        return []
    target = _text(left)
    if target == "module.exports":
        if right is not None and right.type == "object":
            names = []
            for member in right.named_children:
                key = member if member.type == "shorthand_property_identifier" else member.child_by_field_name("key")
                if key is not None:
                    names.append([_text(key).strip("'\""), "commonjs", line, end])
            return names
        return [["default", "commonjs", line, end]]
    if target.startswith(("exports.", "module.exports.")):
        return [[target.rsplit(".", 1)[1], "commonjs", line, end]]
    return []


def _extract(dialect: str, data: bytes) -> dict:
    parser, query = _grammar(dialect)
    import tree_sitter

    root = _parse(dialect, parser, data).root_node
    imports, calls, errors = [], [], []
    for _pattern, found in tree_sitter.QueryCursor(query).matches(root):
        if "error" in found:
            errors.extend(node.start_point.row + 1 for node in found["error"] if not _is_variance_annotation(node))
            continue
        for kind in ("import", "require", "dynamic"):
            for node in found.get(kind, ()):
                imports.append([_string_value(node), kind, node.start_point.row + 1, _import_kinds(node, kind)])
        for node in found.get("fetch", ()):
            target = http_target(_string_value(node))
            if target is not None:
                calls.append(["fetch", _fetch_method(node), target[0], target[1], node.start_point.row + 1])
        for node in found.get("axios", ()):
            target = http_target(_string_value(node) or _object_url(node))
            if target is not None:
                calls.append(["axios", "*", target[0], target[1], node.start_point.row + 1])
        if "axios_member" in found:
            method = _text(found["axios_method"][0])
            node = found["axios_member"][0]
            target = http_target(_string_value(node) or _object_url(node)) if method in AXIOS_METHODS else None
            if target is not None:
                verb = "*" if method in ("request", "create") else method.upper()
                calls.append(["axios", verb, target[0], target[1], node.start_point.row + 1])
    result = {
        "imports": sorted(imports, key=lambda item: (item[2], item[1], item[0])),
        "exports": _exports(root),
        "calls": sorted(calls, key=lambda item: (item[4], item[0], item[1], item[3])),
    }
    if errors or (root.has_error and first_syntax_error(root, _is_variance_annotation) is not None):
        result["error"] = ["syntax error (the parser recovered what it could)", min(errors, default=1)]
    return result


JAVASCRIPT = Extractor("javascript", VERSION, functools.partial(_extract, "javascript"))
TYPESCRIPT = Extractor("typescript", VERSION, functools.partial(_extract, "typescript"))
TSX = Extractor("tsx", VERSION, functools.partial(_extract, "tsx"))

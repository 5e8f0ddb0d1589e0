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
# 4: ``export declare`` declarations are exports; ``export type *``, variance modifiers with a constraint or a
# default, ``import("./o").O<T>`` and ``export { x as null }`` parse; an import type is ``type_only``.
# 5: TypeScript's ``import x = require("x")`` is an import; ``export * as ns from`` exports ``ns``. 6: ``export =``
# is the module's export, as ``module.exports =`` is. 7: each name a destructuring ``export const {a, b} = o``
# binds is exported, and so is ``exports["name"] =``. 8: an import type with type arguments that are not a
# lone name, or as an array's elements, parses (``import("./k").Kinds.Or<[A, B]>``, ``import("..").R[]``: bokeh's).
# 9: a ``global { }`` augmentation inside ``declare module`` parses (@types/node's), and so does ``using`` as an
# argument, a parameter or a callee (drizzle's ``using(using: string)``). 10: a call's first type argument may
# query an import type (airflow's ``importOriginal<typeof import("openapi/queries")>()``), and a parameter's object
# pattern may end in a name on its own line (MUI's declaration files), and a reserved word may be imported by name
# (Vite's chunks, ``import { in as v }``).
VERSION = "10"

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
TYPESCRIPT_QUERIES = """
(import_require_clause source: (string) @import)
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
    "internal_module": "namespace",
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
    queries = QUERIES if dialect == "javascript" else QUERIES + TYPESCRIPT_QUERIES
    return tree_sitter.Parser(language), tree_sitter.Query(language, queries)


def parser(dialect: str):
    """Return the tree-sitter parser of ``dialect`` (javascript, typescript or tsx) the extractor parses with."""
    return _grammar(dialect)[0]


VARIANCE = ("in", "out")
IDENTIFIER = re.compile(rb"[A-Za-z_$][\w$]*")
KEYOF_READONLY = re.compile(rb"\bkeyof(\s+)readonly\b")
# TypeScript 4.7's variance modifiers on a type parameter that has a constraint or a default, or both modifiers
# (``<in T = never>``, ``<in out K extends string>``), and 5.0's ``const`` ones (``<const T extends Tags>``):
# tree-sitter-typescript 0.23 knows ``<in T>`` alone. A block comment may stand before the modifier (zod's
# ``/** @ts-ignore Cast variance */``).
VARIANCE_MODIFIERS = re.compile(
    rb"(?<=[<,])((?:\s|/\*(?:[^*]|\*(?!/))*\*/)*)(in\s+out|in|out|const)"
    rb"(?=\s+[A-Za-z_$][\w$]*\s*(?:[,>=]|extends\b))"
)
# A generic call signature on a line of its own after a member with no ``;`` (effect's overloads,
# ``{ <A>(self: A): B`` then ``<A, B>(self: A, b: B): C }``): the grammar reads the line break as ``A < A, B > (...)``.
# The rewrite puts the ``;`` that a line break stands for after the last token before the signature (not after
# an arrow's ``=>``: ``(a) =>`` then ``<B>(b: B) => ...`` is a curried generic function).
GENERIC_SIGNATURE = re.compile(
    rb"([\w$)\]}'\"`]|(?<!=)>)((?:[ \t]*//[^\n]*)?[ \t]*\n(?:\s|/\*(?:[^*]|\*(?!/))*\*/|//[^\n]*\n)*)"
    rb"(?=<\s*[A-Za-z_$][\w$]*\s*(?:[,>=]|extends\b))"
)
# TypeScript 5.0's ``export type * from "x"`` and ``export type * as ns from "x"``.
EXPORT_TYPE_STAR = re.compile(rb"\bexport(\s+)type(\s*)\*(?:\s+as\s+([A-Za-z_$][\w$]*))?(?=\s+from\b)")
# An import type with type arguments or as an array's elements (``import("./kinds").Kinds.Or<[A, B]>``,
# ``import("..").Renderer[]``, as tsc's declaration emit writes them): tree-sitter-typescript 0.23 reads the import
# as an expression, which takes neither, but it knows ``typeof import("./kinds").Kinds.Or<[A, B]>`` (an
# instantiation expression in a type query) and ``typeof import("..").Renderer[]``.
IMPORT_TYPE_ARGUMENTS = re.compile(
    rb"(?<![\w$.])(?<!typeof )import(?=\s*\(\s*(?:\"[^\"\n]*\"|'[^'\n]*')\s*\)(?:\s*\.\s*[A-Za-z_$][\w$]*)+\s*[<[])"
)
# A call whose first type argument queries an import type (``importOriginal<typeof import("./api")>()``, as
# Vitest's mocks are typed): tree-sitter-typescript 0.23 reads ``importOriginal < typeof import("./api")`` and
# fails at ``>()``, but it reads ``keyof typeof import("./api")`` as a type.
CALL_IMPORT_QUERY = re.compile(rb"(?<=<)(\s*)typeof(?=\s+import\s*\()")
# A parameter's object pattern whose last name stands on a line of its own before ``}:`` (tsc's declaration emit
# of MUI's ``({\n  index\n}: {...}) => ...``): tree-sitter-typescript 0.23 takes it for an object type. It knows the
# pattern with a trailing comma.
SHORTHAND_BEFORE_BRACE = re.compile(rb"(?m)^([ \t]*[A-Za-z_$][\w$]*)(?=[ \t]*\r?\n[ \t]*\}[ \t]*:)")
# A global augmentation inside an ambient module or namespace (``declare module "buffer" { global { ... } }``, as
# @types/node writes it): tree-sitter-typescript 0.23 knows only ``declare global { ... }``.
NESTED_GLOBAL = re.compile(rb"(?m)^([ \t]+)global(?=[ \t]*\{)")
# ``using`` is a name wherever it does not declare (TypeScript 5.2's ``using res = f()``), and drizzle's
# ``using(using: string)`` or a call ``using(a)`` are errors to tree-sitter 0.23/0.25, which take it for the
# keyword. As an argument or a parameter, or called at the start of a line, it is renamed (no fact is a parameter's
# or a callee's name); an export of that name is never touched.
USING_ARGUMENT = re.compile(rb"([(,]\s*)using(?=\s*[),:?=])")
USING_CALL = re.compile(rb"(?m)^([ \t]*)using(?=[ \t]*\()")


# A reserved word imported or re-exported by name (``import { in as v } from "./chunk.js"``, as Rollup and Vite name
# a chunk's exports): any name may be, and tree-sitter-javascript 0.25 takes a reserved one for an error. The
# word's first letter is put in the other case (no fact is the name a module exports to this one).
RESERVED_IMPORTED = re.compile(
    rb"(?<=[{,])(\s*)(break|case|catch|class|const|continue|debugger|delete|do|else|enum|export|extends|false|finally|"
    rb"for|function|if|import|in|instanceof|new|null|return|super|switch|this|throw|true|try|typeof|var|void|while|"
    rb"with)(?=\s+as\s)"
)


def _export_type_star(found) -> bytes:
    names = found[3] or b""
    return b"export" + found[1] + b"type" + found[2] + b"{" + names + b"}"


def _parse(dialect: str, parser, data: bytes):
    """Return ``data``'s tree. Where the first parse failed, the file is parsed again with what
    tree-sitter-typescript 0.23 cannot parse written as what it can, keeping every line and every fact:

    - ``keyof readonly T[]``: the ``readonly`` blanked (no fact depends on the modifier);
    - ``<in out K extends string>``, ``<in T = never>`` and ``<const T>``: the modifiers blanked;
    - ``export type * from "x"`` as ``export type {} from "x"``, and ``export type * as ns from "x"`` as
      ``export type {ns} from "x"``: the same type-only import of ``x``, and the same name exported;
    - ``import("./o").O<T>`` and ``import("./o").O[]`` with ``typeof`` before them, and ``f<typeof import("./o")>()``
      with ``keyof`` before its type query: the same type-only import of ``./o``;
    - an indented ``global { ... }`` (a global augmentation in an ambient module) as ``declare global { ... }``;
    - a parameter's object pattern ending in a name on its own line before ``}:``: a comma after the name;
    - ``using`` as an argument, a parameter or a callee (not the keyword) renamed ``usinG`` (JavaScript too);
    - a reserved word imported by name (``import { in as v }``) with its first letter in upper case (JavaScript too);
    - a generic call signature on a line of its own (``<A, B>(f: (a: A) => B): C``) after a member the line
      break ends: a ``;`` put after that member, where the line break stands for one (TypeScript, not TSX).

    Only a string or comment holding those very words would read differently.
    """
    tree = parser.parse(data)
    if not tree.root_node.has_error:
        return tree
    rewritten = data
    if b"using" in rewritten:
        rewritten = USING_CALL.sub(rb"\1usinG", USING_ARGUMENT.sub(rb"\1usinG", rewritten))
    if b" as " in rewritten:
        rewritten = RESERVED_IMPORTED.sub(lambda found: found[1] + found[2][:1].upper() + found[2][1:], rewritten)
    if dialect == "javascript":
        return parser.parse(rewritten) if rewritten != data else tree
    if b"readonly" in rewritten:
        rewritten = KEYOF_READONLY.sub(lambda found: b"keyof" + found[1] + b" " * len(b"readonly"), rewritten)
    if b"in" in rewritten or b"out" in rewritten or b"const" in rewritten:
        rewritten = VARIANCE_MODIFIERS.sub(lambda found: found[1] + re.sub(rb"\S", b" ", found[2]), rewritten)
    if b"type" in rewritten:
        rewritten = EXPORT_TYPE_STAR.sub(_export_type_star, rewritten)
    if b"import" in rewritten:
        rewritten = CALL_IMPORT_QUERY.sub(rb"\1keyof typeof", IMPORT_TYPE_ARGUMENTS.sub(b"typeof import", rewritten))
    if b"global" in rewritten:
        rewritten = NESTED_GLOBAL.sub(rb"\1declare global", rewritten)
    if b"}" in rewritten:
        rewritten = SHORTHAND_BEFORE_BRACE.sub(rb"\1,", rewritten)
    if dialect == "typescript" and b"\n" in rewritten:  # in TSX a line that opens with "<" is an element
        rewritten = GENERIC_SIGNATURE.sub(rb"\1;\2", rewritten)
    return parser.parse(rewritten) if rewritten != data else tree


def _is_variance_annotation(error) -> bool:
    """Whether an error node is the parameter after TypeScript 4.7's ``in``/``out`` (``<in T, out U>``,
    ``<in out T>``): tree-sitter-typescript 0.23 takes the keyword for the parameter's name and the name for an error."""
    before = error.prev_named_sibling
    return (
        error.parent is not None and error.parent.type == "type_parameters"
        and before is not None and before.type == "type_parameter" and _text(before) in VARIANCE
        and all(child.type == "identifier" for child in error.named_children)
    )


def _is_keyword_alias(error) -> bool:
    """Whether an error node is ``as null`` in ``export { _null as null }``: any name may be exported, reserved
    words too, and tree-sitter-javascript 0.25 takes a reserved one for an error."""
    children = error.children
    return (
        error.parent is not None and error.parent.type == "export_clause" and len(children) == 2
        and children[0].type == "as" and IDENTIFIER.fullmatch(children[1].text) is not None
    )


def _tolerated(error) -> bool:
    """Whether an error (or missing) node is syntax the language allows and the grammar does not know (above)."""
    return not error.is_missing and (_is_variance_annotation(error) or _is_keyword_alias(error))


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


def _in_a_type(node) -> bool:
    """Whether ``node`` is inside a type (``let x: import("./o").O``), not an expression, of its statement."""
    node = node.parent
    while node is not None and not node.type.endswith(("statement", "declaration", "program", "statement_block")):
        if node.type.startswith("type_") or node.type.endswith("_type") or node.type == "constraint":
            return True
        node = node.parent
    return node is not None and node.type == "type_alias_declaration"


def _import_kinds(node, kind: str) -> list:
    statement = node.parent
    if statement is not None and statement.type == "import_require_clause":  # import type x = require("x")
        statement = statement.parent
    if kind == "dynamic":
        return ["type_only"] if _in_a_type(node) else ["dynamic"]  # import("./o").O in a type loads nothing
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
            if any(child.type == "=" for child in statement.children):  # export = express: module.exports, typed
                exports.append(["default", "commonjs", line, end])
                continue
            declaration = statement.child_by_field_name("declaration")
            if declaration is not None and declaration.type == "ambient_declaration":  # export declare function f()
                declaration = declaration.named_children[0] if declaration.named_children else None
            if declaration is not None:
                kind = DECLARATIONS.get(declaration.type)
                if kind is not None:
                    name = declaration.child_by_field_name("name")
                    if name is not None:
                        exports.append([_text(name), kind, line, end])
                elif declaration.type in ("lexical_declaration", "variable_declaration"):
                    for declarator in declaration.named_children:
                        name = declarator.child_by_field_name("name") if declarator.type == "variable_declarator" else None
                        if name is not None:  # export const {a, b: c} = obj, export let [x, y] = pair: each name
                            exports.extend([bound, "variable", line, end] for bound in _bound_names(name))
                continue
            for clause in statement.named_children:
                if clause.type == "namespace_export" and clause.named_children:  # export * as ns from "./m"
                    name = clause.named_children[0]
                    exports.append([_string_value(name) or _text(name), "reexport", line, end])
                elif clause.type == "export_clause":
                    for specifier in clause.named_children:
                        if specifier.type == "ERROR" and _is_keyword_alias(specifier) and exports:
                            exports[-1][0] = _text(specifier.children[1])  # export { _null as null }
                            continue
                        alias = specifier.child_by_field_name("alias") or specifier.child_by_field_name("name")
                        if alias is not None:
                            exports.append([_text(alias), "reexport" if statement.child_by_field_name("source") else "binding", line, end])
        elif statement.type == "expression_statement" and statement.named_children:
            exports.extend(_commonjs_exports(statement.named_children[0], line, end))
    return exports


def _bound_names(pattern) -> list[str]:
    """Return the names a declarator's ``pattern`` binds, in order: an identifier's own, or each one a
    destructuring pattern binds (``{a, b: c, d = 1, ...rest}``, ``[x, , y]``), not its keys or defaults."""
    if pattern.type in ("identifier", "shorthand_property_identifier_pattern"):
        return [_text(pattern)]
    if pattern.type in ("pair_pattern", "assignment_pattern", "object_assignment_pattern"):
        bound = pattern.child_by_field_name("value" if pattern.type == "pair_pattern" else "left")
        return _bound_names(bound) if bound is not None else []
    if pattern.type in ("object_pattern", "array_pattern", "rest_pattern"):
        return [name for child in pattern.named_children for name in _bound_names(child)]
    return []


def _commonjs_exports(expression, line, end) -> list:
    if expression.type != "assignment_expression":
        return []
    left, right = expression.child_by_field_name("left"), expression.child_by_field_name("right")
    if left is not None and left.type == "subscript_expression":  # exports["name"] = ..., as compilers write it
        owner, index = left.child_by_field_name("object"), left.child_by_field_name("index")
        if owner is not None and index is not None and index.type == "string" and _text(owner) in ("exports", "module.exports"):
            return [[_string_value(index), "commonjs", line, end]]
        return []
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
            errors.extend(node.start_point.row + 1 for node in found["error"] if not _tolerated(node))
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
    if errors or (root.has_error and first_syntax_error(root, _tolerated) is not None):
        result["error"] = ["syntax error (the parser recovered what it could)", min(errors, default=1)]
    return result


JAVASCRIPT = Extractor("javascript", VERSION, functools.partial(_extract, "javascript"))
TYPESCRIPT = Extractor("typescript", VERSION, functools.partial(_extract, "typescript"))
TSX = Extractor("tsx", VERSION, functools.partial(_extract, "tsx"))

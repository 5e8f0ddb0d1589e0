"""
Python with tree-sitter's Python grammar: imports (with how they are made), top-level symbols, HTTP calls.

The grammar, not the worker's interpreter, decides what parses: a file using syntax newer than the worker's
Python (3.12 generics, 3.13 defaults on type parameters) parses the same on every worker, so a mixed fleet seals
one hash for one commit. The output depends only on the file's bytes (no path, no other file), so it is cached by
content. Imports and calls are found by tree-sitter queries, which run in C over the whole tree; only what they
find is looked at in Python.

Each import carries the ways it is made, as a sorted list of words:

- ``type_only``: under ``if TYPE_CHECKING:``, so never imported at run time;
- ``optional``: in the body of a ``try`` whose handlers catch ``ImportError`` (or a base of it), or of a
  ``with suppress(ImportError)``; ``pytest.importorskip("name")`` (a test skipped without it) is optional too;
- ``local``: inside a function, so imported when it is first called;
- ``dynamic``: ``importlib.import_module("name")`` (or ``import_module``, ``__import__``) with a literal name;
- ``lazy``: ``lazy import name`` (PEP 810, Python 3.15), imported when the name is first used.

An HTTP call is a ``requests``/``httpx``/``urllib``/``aiohttp`` function called with a literal URL, or a method
called on a client or session object: one made from the library in the file (``s = requests.Session()``,
``with httpx.Client(base_url=...) as client``, ``httpx.Client().get``), or one whose name says it is a client or
a session (``self.session.post("https://...")``) when the URL is absolute.
"""

import functools
import re
import tomllib
import warnings

from .base import Extractor, first_syntax_error, http_target
from .manifests import requirement

# 3: pytest.importorskip and with suppress(ImportError) are optional imports; 4: ``a, *[b]`` parses. 5: a type
# parameter's default parses after a bound and on a long name (Home Assistant's ``[_DataT: Mapping = Mapping]``),
# PEP 723's inline script metadata declares the script's dependencies, and Python 3.15's lazy imports (the kind
# ``lazy``) and unpacking in comprehensions parse.
VERSION = "5"

QUERIES = """
(import_statement) @import
(import_from_statement) @import
(future_import_statement) @import
(call
  function: (attribute object: (identifier) @_lib attribute: (identifier) @_fn)
  arguments: (argument_list . (string) @dynamic)
  (#eq? @_lib "importlib") (#eq? @_fn "import_module"))
(call function: (identifier) @_fn arguments: (argument_list . (string) @dynamic) (#match? @_fn "^(__import__|import_module)$"))
(call
  function: [(identifier) @_fn (attribute object: (identifier) @_lib attribute: (identifier) @_fn)]
  arguments: (argument_list . (string) @skippable)
  (#eq? @_fn "importorskip"))
(call
  function: [
    (identifier) @name
    (attribute object: (_) @receiver attribute: (identifier) @name)
  ]
  arguments: (argument_list) @arguments
  (#match? @name "^(get|post|put|patch|delete|head|options|request|stream|urlopen|Request)$")) @call
(assignment left: (_) @target right: (call function: (_) @constructor arguments: (argument_list) @options))
(with_item value: (as_pattern (call function: (_) @constructor arguments: (argument_list) @options) alias: (as_pattern_target (_) @target)))
"""

HTTP_METHODS = frozenset({"get", "post", "put", "patch", "delete", "head", "options"})
# What a resolved function name means: the client, and its method (None: taken from the first argument).
HTTP_FUNCTIONS = {
    "requests.request": ("requests", None),
    "httpx.request": ("httpx", None),
    "httpx.stream": ("httpx", None),
    "urllib.request.urlopen": ("urllib", "GET"),
    "urllib.request.Request": ("urllib", "GET"),
    **{f"{library}.{method}": (library, method.upper()) for library in ("requests", "httpx") for method in HTTP_METHODS},
}
# Constructors of client objects whose methods make HTTP calls.
HTTP_CLIENTS = {
    "requests.Session": "requests",
    "requests.session": "requests",
    "requests.sessions.Session": "requests",
    "httpx.Client": "httpx",
    "httpx.AsyncClient": "httpx",
    "aiohttp.ClientSession": "aiohttp",
    "urllib3.PoolManager": "urllib3",
}
CLIENT_NAMES = ("client", "session", "http")  # a receiver whose name holds one of these is taken for a client
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
SCOPES = frozenset({"function_definition", "lambda"})
DEFINITIONS = {"class_definition": "class", "function_definition": "function", "type_alias_statement": "type"}


@functools.cache
def _grammar():
    import tree_sitter
    import tree_sitter_python

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        language = tree_sitter.Language(tree_sitter_python.language())
    return tree_sitter.Parser(language), tree_sitter.Query(language, QUERIES)


def parser():
    """Return the tree-sitter parser the extractor parses Python with (the benchmark's floor parses with it too)."""
    return _grammar()[0]


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def _line(node) -> int:
    return node.start_point.row + 1


def _string(node) -> str | None:
    """Return a string literal's value, or an f-string's literal head (enough to name a host); None for bytes."""
    if node.type == "concatenated_string":
        parts = [_string(child) for child in node.named_children]
        return "".join(part for part in parts if part is not None) if None not in parts else None
    if node.type != "string":
        return None
    value = []
    for child in node.named_children:
        if child.type == "string_start":
            if "b" in _text(child).lower():
                return None
        elif child.type == "string_content":
            value.append(_text(child))
        elif child.type == "interpolation":
            break
    return "".join(value)


def _dotted(node) -> str | None:
    """Return ``a.b.c`` for a name or an attribute chain, else None."""
    parts = []
    while node.type == "attribute":
        parts.append(_text(node.child_by_field_name("attribute")))
        node = node.child_by_field_name("object")
    if node.type != "identifier":
        return None
    parts.append(_text(node))
    return ".".join(reversed(parts))


# -- imports ---------------------------------------------------------------------------------------------------


def _dotted(node) -> str:
    """Return a dotted name as Python reads it: ``a .  b`` is ``a.b``."""
    return ".".join(_text(part) for part in node.named_children) if node.type == "dotted_name" else _text(node)


def _module_and_level(node) -> tuple[str, int]:
    if node.type == "relative_import":
        prefix = next(child for child in node.children if child.type == "import_prefix")
        name = next((child for child in node.named_children if child.type == "dotted_name"), None)
        return (_dotted(name) if name is not None else ""), len(_text(prefix).replace(" ", ""))
    return _dotted(node), 0


def _imports(statement) -> list[tuple]:
    """Return ``(module, level, names, bound)`` for each module ``statement`` imports.

    ``bound`` maps each local name the statement binds to the dotted name it stands for.
    """
    if statement.type == "future_import_statement":
        return [("__future__", 0, [], {})]
    if statement.type == "import_statement":
        found = []
        for name in statement.named_children:
            if name.type == "aliased_import":
                module, alias = _dotted(name.child_by_field_name("name")), _text(name.child_by_field_name("alias"))
                found.append((module, 0, [], {alias: module}))
            elif name.type == "dotted_name":
                module = _dotted(name)
                head = module.split(".", 1)[0]
                found.append((module, 0, [], {head: head}))
        return found
    module, level = _module_and_level(statement.child_by_field_name("module_name"))
    names, bound = [], {}
    for child in statement.children_by_field_name("name"):
        alias = None
        if child.type == "aliased_import":
            child, alias = child.child_by_field_name("name"), _text(child.child_by_field_name("alias"))
        names.append(_dotted(child))
        if not level:
            bound[alias or names[-1]] = f"{module}.{names[-1]}"
    if any(child.type == "wildcard_import" for child in statement.named_children):
        names.append("*")
    return [(module, level, names, bound)]


def _is_type_checking(condition) -> bool:
    return condition is not None and _text(condition) in ("TYPE_CHECKING", "typing.TYPE_CHECKING", "t.TYPE_CHECKING")


def _catches_import_errors(try_statement) -> bool:
    for clause in try_statement.named_children:
        if clause.type != "except_clause":
            continue
        caught = [child for child in clause.named_children if child.type != "block"]
        if not caught:
            return True  # a bare except
        names = _text(caught[0]).replace("(", " ").replace(")", " ").replace(",", " ").split()
        if any(name.rpartition(".")[2] in IMPORT_ERRORS for name in names):
            return True
    return False


def _suppresses_import_errors(with_statement) -> bool:
    """Return whether the ``with`` is ``suppress(ImportError)`` (``contextlib.suppress``, any alias of it)."""
    for clause in with_statement.named_children:
        for item in clause.named_children if clause.type == "with_clause" else ():
            call = item.child_by_field_name("value")
            if call is None or call.type != "call":
                continue
            function, arguments = call.child_by_field_name("function"), call.child_by_field_name("arguments")
            if function is not None and _text(function).rpartition(".")[2] == "suppress" and arguments is not None:
                if any(_text(argument).rpartition(".")[2] in IMPORT_ERRORS for argument in arguments.named_children):
                    return True
    return False


def _kinds(node) -> list[str]:
    """Return how the import at ``node`` is made (see the module's docstring), from the statements around it."""
    kinds, child, parent = set(), node, node.parent
    while parent is not None:
        if parent.type in SCOPES:
            kinds.add("local")
        elif parent.type == "if_statement" and child == parent.child_by_field_name("consequence"):
            if _is_type_checking(parent.child_by_field_name("condition")):
                kinds.add("type_only")
        elif parent.type == "try_statement" and child == parent.child_by_field_name("body"):
            if _catches_import_errors(parent):
                kinds.add("optional")
        elif parent.type == "with_statement" and child == parent.child_by_field_name("body"):
            if _suppresses_import_errors(parent):
                kinds.add("optional")
        child, parent = parent, parent.parent
    return sorted(kinds)


# -- HTTP calls ------------------------------------------------------------------------------------------------


class _Calls:
    """The file's HTTP calls, resolved through its imports and the client objects it makes."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases  # local name -> the dotted name it was imported as
        self.clients: dict[str, tuple[str, str | None]] = {}  # receiver text -> (library, base URL)
        self.found: list = []

    def resolve(self, dotted: str | None) -> str | None:
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head not in self.aliases:
            return None
        return self.aliases[head] + (f".{rest}" if rest else "")

    def client_made_by(self, constructor, options) -> tuple[str, str | None] | None:
        library = HTTP_CLIENTS.get(self.resolve(_dotted(constructor)) or "")
        if library is None:
            return None
        return library, _keyword(options, "base_url")

    def constructed(self, target, constructor, options) -> None:
        client = self.client_made_by(constructor, options)
        if client is not None:
            self.clients[_text(target)] = client

    def call(self, call, name, receiver, arguments) -> None:
        method = _text(name)
        base = None
        if receiver is None:
            client, verb = HTTP_FUNCTIONS.get(self.resolve(method) or "", (None, None))
        elif (function := self.resolve(_dotted(receiver))) and f"{function}.{method}" in HTTP_FUNCTIONS:
            client, verb = HTTP_FUNCTIONS[f"{function}.{method}"]
        elif method in HTTP_METHODS or method in ("request", "stream"):
            made = self.clients.get(_text(receiver))
            if made is None and receiver.type == "call":
                made = self.client_made_by(receiver.child_by_field_name("function"), receiver.child_by_field_name("arguments"))
            if made is None and any(word in _text(receiver).rpartition(".")[2].lower() for word in CLIENT_NAMES):
                made = (_text(receiver), None)  # a client by its name only: an absolute URL is asked for below
            if made is None:
                return
            client, base = made
            verb = None if method in ("request", "stream") else method.upper()
        else:
            return
        if client is None:
            return
        positional = [child for child in arguments.named_children if child.type not in ("keyword_argument", "comment")]
        if verb is None:  # request(method, url)
            verb = (_string(positional[0]) or "?").upper() if positional else "?"
            positional = positional[1:]
        url = _keyword(arguments, "url") or (_string(positional[0]) if positional else None)
        if url is not None and base is not None and "://" not in url:
            url = base.rstrip("/") + "/" + url.lstrip("/")
        target = http_target(url)
        if target is not None:
            self.found.append((client, verb, target[0], target[1], _line(call)))


def _keyword(arguments, keyword: str) -> str | None:
    for child in arguments.named_children:
        if child.type == "keyword_argument" and _text(child.child_by_field_name("name")) == keyword:
            return _string(child.child_by_field_name("value"))
    return None


# -- the file --------------------------------------------------------------------------------------------------


def _definitions(root) -> list:
    defs = []
    for statement in root.named_children:
        first = _line(statement)
        definition = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
        kind = DEFINITIONS.get(definition.type) if definition is not None else None
        if kind is None:
            continue
        name = definition.child_by_field_name("name") if kind != "type" else definition.child_by_field_name("left")
        if name is None:
            continue
        if name.type == "type":  # ``type Alias[T] = ...``: the name before its parameters
            name = name.named_children[0] if name.named_children else name
            name = name.named_children[0] if name.type == "generic_type" and name.named_children else name
        defs.append([kind, _text(name), first, statement.end_point.row + 1])
    return defs


# A type parameter list (PEP 695) and the defaults in it (PEP 696, Python 3.13: ``class Box[T: Base = Base]``,
# ``def f[T = int]``), which tree-sitter-python 0.25 does not know. No fact depends on a default.
TYPE_PARAMETERS = re.compile(rb"(?<![\w.])(?:class|def|type)[ \t]+\w+[ \t]*\[")
# A starred list, tuple, set or string in a tuple written without parentheses (``yield a, *[f(x) for x in y]``,
# ``return a, *(b)``, ``g = 1, *"ten"``): valid since Python 3.5, and an error in tree-sitter-python 0.25, which
# knows ``*b`` there and ``(a, *[b])``. No fact depends on the star.
STARRED_IN_TUPLE = re.compile(rb"(?:(?<=,)|(?<==)|(?<=\breturn)|(?<=\byield)|(?<=\bin))(\s*)\*(?=[\[({\"'])")
# Python 3.15's unpacking in a comprehension (``[*row for row in rows]``, ``{**d for d in dicts}``, PEP 798) and
# its explicit lazy imports (``lazy import json``, ``lazy from a import b``, PEP 810): the stars and the soft
# keyword are blanked, and a lazy import is then told by the word before it.
COMPREHENSION_UNPACKING = re.compile(rb"([\[{][ \t]*)(\*\*?)(?=[\w(\[{])")
LAZY_IMPORT = re.compile(rb"(?m)^([ \t]*)lazy(?=[ \t]+(?:import|from)[ \t(\\])")


def _blank_type_parameter_defaults(data: bytes) -> bytes:
    """Return ``data`` with each ``= default`` of a type parameter list blanked (its line breaks and comments
    kept); an empty default (``[T = ]``) is left to be the error it is."""
    blanked = bytearray(data)
    for found in TYPE_PARAMETERS.finditer(data):
        depth, default, at = 1, None, found.end()  # default: where the "=" of the parameter being read is
        while at < len(data) and depth:
            byte = data[at]
            if byte == ord("#"):  # a comment (Home Assistant's "# pylint: disable=..."), to the line's end
                comment_end = data.find(b"\n", at)
                at = len(data) if comment_end < 0 else comment_end
                continue
            depth += (byte in b"[(") - (byte in b"])")
            if depth == 1 and byte == ord("=") and default is None:
                default = at
            elif default is not None and (depth == 0 or depth == 1 and byte == ord(",")):
                if data[default + 1 : at].strip():
                    blanked[default:at] = re.sub(rb"[^\r\n]", b" ", data[default:at])
                default = None
            at += 1
    return bytes(blanked)


def _parse(parser, data: bytes):
    """Return ``data``'s tree. Where it failed to parse, ``data`` is parsed again with the syntax
    tree-sitter-python 0.25 does not know blanked, on the same lines and with the same facts: the defaults of
    type parameters, the stars of starred items in an unparenthesised tuple and of unpacking in a comprehension,
    and the ``lazy`` of a lazy import."""
    tree = parser.parse(data)
    if not tree.root_node.has_error:
        return tree
    rewritten = STARRED_IN_TUPLE.sub(rb"\1 ", data)
    if b"[" in rewritten:
        rewritten = _blank_type_parameter_defaults(rewritten)
    if b"*" in rewritten:
        rewritten = COMPREHENSION_UNPACKING.sub(lambda found: found[1] + b" " * len(found[2]), rewritten)
    if b"lazy" in rewritten:
        rewritten = LAZY_IMPORT.sub(rb"\1    ", rewritten)
    return parser.parse(rewritten) if rewritten != data else tree


CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
# PEP 723's inline script metadata: a ``# /// script`` block of comment lines holding TOML, whose ``dependencies``
# are what the script runs with (``uv run``, ``pipx run``, marimo's notebooks).
SCRIPT_METADATA = re.compile(rb"(?m)^# /// script[ \t]*\r?\n((?:^#(?:[ \t].*)?\r?\n)+)^# ///[ \t]*$")


def _script_dependencies(data: bytes) -> list | None:
    """Return the declared rows of the script's inline metadata (scope ``script``), or None when it has none.
    Raises ``tomllib.TOMLDecodeError`` when the block is not TOML."""
    found = SCRIPT_METADATA.search(data) if b"# /// script" in data else None
    if found is None:
        return None
    first = data.count(b"\n", 0, found.start(1)) + 1
    lines = [line[2:] if line.startswith(b"# ") else line[1:] for line in found[1].splitlines()]
    document = tomllib.loads(b"\n".join(lines).decode("utf-8", errors="replace"))
    rows = []
    for value in document.get("dependencies") or ():
        if isinstance(value, str) and (parsed := requirement(value)) is not None:
            line = first + next((number for number, text in enumerate(lines) if value.encode() in text), 0)
            rows.append(["pypi", *parsed, "script", line])
    return rows


def _undecodable_line(data: bytes) -> int | None:
    """Return the line where the source stops being text in its declared encoding (UTF-8 unless a PEP 263
    cookie on one of the first two lines names another), or None when all of it decodes."""
    encoding = "utf-8"
    for line in data.split(b"\n", 2)[:2]:
        if cookie := CODING.match(line):
            encoding = cookie.group(1).decode("ascii")
            break
    try:
        data.decode(encoding)
    except LookupError:
        return 1
    except UnicodeDecodeError as error:
        return data.count(b"\n", 0, error.start) + 1
    return None


def extract_python(data: bytes) -> dict:
    """Return what the module imports, defines and calls; a file that does not parse also gets a diagnostic."""
    import tree_sitter

    parser, query = _grammar()
    root = _parse(parser, data).root_node
    imports, aliases, statements, dynamic, calls, clients = [], {}, [], [], [], []
    for _pattern, found in tree_sitter.QueryCursor(query).matches(root):
        if "import" in found:
            statements.append(found["import"][0])
        elif "dynamic" in found:
            dynamic.append((found["dynamic"][0], "dynamic"))
        elif "skippable" in found:
            dynamic.append((found["skippable"][0], "optional"))
        elif "call" in found:
            calls.append((found["call"][0], found["name"][0], found.get("receiver", [None])[0], found["arguments"][0]))
        elif "constructor" in found:
            clients.append((found["target"][0], found["constructor"][0], found["options"][0]))
    lazy = b"lazy" in data
    for statement in statements:
        kinds = _kinds(statement)
        if lazy and data[data.rfind(b"\n", 0, statement.start_byte) + 1 : statement.start_byte].strip() == b"lazy":
            kinds = sorted({*kinds, "lazy"})
        for module, level, names, bound in _imports(statement):
            imports.append([module, level, names, _line(statement), kinds])
            for name, dotted in bound.items():
                if name not in aliases or dotted != name:  # ``import a.b`` binds ``a`` unless something else did
                    aliases[name] = dotted
    for node, how in dynamic:
        module = _string(node)
        if module and not module.startswith("."):
            imports.append([module, 0, [], _line(node), sorted({"dynamic", how, *_kinds(node)})])
    http = _Calls(aliases)
    for target, constructor, options in clients:
        http.constructed(target, constructor, options)
    for call in calls:
        http.call(*call)
    result = {
        "imports": sorted(imports, key=lambda row: (row[3], row[0], row[1])),
        "defs": _definitions(root),
        "calls": [list(call) for call in sorted(set(http.found))],
    }
    if (line := _undecodable_line(data)) is not None:
        result["error"] = ["the source is not text in its declared encoding", line]
    elif root.has_error and (error := first_syntax_error(root)) is not None:
        result["error"] = ["syntax error (the parser recovered what it could)", _line(error)]
    try:
        declared = _script_dependencies(data)
    except tomllib.TOMLDecodeError as error:
        line = data.count(b"\n", 0, data.find(b"# /// script")) + 1
        result.setdefault("error", [f"the inline script metadata is not TOML ({error})", line])
    else:
        if declared is not None:
            result["declared"] = declared  # the key the dependencies family looks for (see its ``reads``)
    return result


PYTHON = Extractor("python", VERSION, extract_python)

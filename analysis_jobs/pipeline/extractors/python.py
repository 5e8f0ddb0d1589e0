"""
Python with the standard ``ast``: imports, top-level classes and functions, HTTP calls with a literal URL.

The output depends only on the file's bytes (no path, no other file), so it is cached by content. To stay close
to the cost of ``ast.parse`` alone, the tree is not walked whole: only statements whose lines hold the word
``import`` or an HTTP client's name are descended into.
"""

import ast
import bisect
import re
import sys

from .base import Extractor, http_target

VERSION = f"1+py{sys.version_info[0]}.{sys.version_info[1]}"

HTTP_CLIENTS = (b"requests", b"httpx", b"urllib", b"urlopen")
_MARKERS = re.compile(rb"import|requests|httpx|urllib|urlopen")

# What a resolved call name means: (client, method); "*" takes the method from the attribute name.
HTTP_FUNCTIONS = {
    "requests.request": ("requests", None),
    "httpx.request": ("httpx", None),
    "httpx.stream": ("httpx", None),
    "urllib.request.urlopen": ("urllib", "GET"),
    "urllib.request.Request": ("urllib", "GET"),
    "httpx.Client": ("httpx", "CLIENT"),
    "httpx.AsyncClient": ("httpx", "CLIENT"),
}
HTTP_METHODS = {"get", "post", "put", "patch", "delete", "head", "options"}
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _literal_url(node) -> str | None:
    """Return a string constant, or the literal head of an f-string (enough to name the host)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value
    return None


class _Scan:
    def __init__(self, data: bytes, markers=_MARKERS, *, record_imports: bool = True):
        marked, line, previous = [], 1, 0
        for match in markers.finditer(data):
            line += data.count(b"\n", previous, match.start())
            previous = match.start()
            if not marked or marked[-1] != line:
                marked.append(line)
        self.marked = marked  # the lines that name ``import`` or a client, ascending
        self.record_imports = record_imports
        self.imports: list = []
        self.calls: list = []  # (dotted name, node) resolved after the aliases are known
        self.want_calls = any(client in data for client in HTTP_CLIENTS)

    def marked_between(self, first: int, last: int) -> bool:
        index = bisect.bisect_left(self.marked, first)
        return index < len(self.marked) and self.marked[index] <= last

    def statements(self, body) -> None:
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)) and not self.record_imports:
                continue
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    self.imports.append((alias.name, 0, [], statement.lineno, alias.asname))
            elif isinstance(statement, ast.ImportFrom):
                names = [alias.name for alias in statement.names]
                self.imports.append((statement.module or "", statement.level, names, statement.lineno, None))
                self._from_aliases(statement)
            elif self.marked_between(statement.lineno, statement.end_lineno or statement.lineno):
                self._descend(statement)

    def _from_aliases(self, statement) -> None:
        if statement.level or not statement.module:
            return
        for alias in statement.names:
            self.imports.append((f"{statement.module}.{alias.name}", -1, [], statement.lineno, alias.asname or alias.name))

    def _descend(self, statement) -> None:
        nested = False
        for field in _STATEMENT_LISTS:
            value = getattr(statement, field, None)
            if value:
                nested = True
                self.statements(value)
        if not nested:
            self._expressions(statement)
            return
        for field, value in ast.iter_fields(statement):
            if field in _STATEMENT_LISTS:
                continue
            if isinstance(value, ast.AST):
                self._expressions(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self._expressions(item)

    def _expressions(self, node) -> None:
        if not self.want_calls:
            return
        for child in ast.walk(node):
            if isinstance(child, ast.Call):
                name = _dotted(child.func)
                if name is not None:
                    self.calls.append((name, child))


def _aliases(imports) -> dict[str, str]:
    """Map a local name to the dotted name it was imported as."""
    aliases = {}
    for module, level, _names, _line, asname in imports:
        if level == -1:
            aliases[asname] = module
        elif level == 0:
            if asname:
                aliases[asname] = module
            else:
                head = module.split(".", 1)[0]
                aliases.setdefault(head, head)
    return aliases


def _http_calls(calls, aliases) -> list:
    found = []
    for name, call in calls:
        head, _, rest = name.partition(".")
        if head not in aliases:
            continue
        full = aliases[head] + (f".{rest}" if rest else "")
        client_method = HTTP_FUNCTIONS.get(full)
        url_node = None
        if client_method is None:
            client, _, method = full.rpartition(".")
            if client not in ("requests", "httpx") or method not in HTTP_METHODS:
                continue
            client_method = (client, method.upper())
            url_node = call.args[0] if call.args else None
        elif client_method[1] is None:  # request(method, url)
            method_node = call.args[0] if call.args else None
            method = method_node.value.upper() if isinstance(method_node, ast.Constant) and isinstance(method_node.value, str) else "?"
            client_method = (client_method[0], method)
            url_node = call.args[1] if len(call.args) > 1 else None
        elif client_method[1] == "CLIENT":
            client_method = (client_method[0], "*")
        else:
            url_node = call.args[0] if call.args else None
        for keyword in call.keywords:
            if keyword.arg in ("url", "base_url"):
                url_node = keyword.value
        url = _literal_url(url_node) if url_node is not None else None
        target = http_target(url)
        if target is not None:
            found.append([client_method[0], client_method[1], target[0], target[1], call.lineno])
    return found


def extract_python(data: bytes) -> dict:
    """Return what the module declares and uses, or a syntax-error diagnostic."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        line = getattr(error, "lineno", None) or 1
        message = getattr(error, "msg", None) or str(error)
        return {"error": [message.splitlines()[0][:200] if message else "syntax error", max(1, int(line))]}
    scan = _Scan(data)
    scan.statements(tree.body)
    aliases = _aliases(scan.imports)
    calls = scan.calls
    if scan.want_calls:
        # A client imported under another name (``from httpx import AsyncClient``) is called on lines that do
        # not name the client: look at those lines too.
        other = sorted(
            local for local, full in aliases.items()
            if full.split(".", 1)[0] in ("requests", "httpx", "urllib") and local not in ("requests", "httpx", "urllib", "urlopen")
        )
        if other:
            again = _Scan(data, re.compile(rb"\b(?:" + b"|".join(re.escape(name.encode()) for name in other) + rb")\b"), record_imports=False)
            again.statements(tree.body)
            calls = calls + again.calls
    defs = []
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            kind = "class"
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = "function"
        else:
            continue
        first = min([statement.lineno] + [decorator.lineno for decorator in statement.decorator_list])
        defs.append([kind, statement.name, first, statement.end_lineno or statement.lineno])
    imports = [[module, level, names, line] for module, level, names, line, _ in scan.imports if level >= 0]
    calls = sorted({tuple(call) for call in _http_calls(calls, aliases)})
    return {"imports": imports, "defs": defs, "calls": [list(call) for call in calls]}


PYTHON = Extractor("python", VERSION, extract_python)

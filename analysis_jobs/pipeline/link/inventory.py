"""The inventory: a node per listed file, the repository with its language counts, and each file's diagnostics."""

from collections import Counter

from .family import INVENTORY, Family

# Entries that are not regular files, by kind: the diagnostic code and its message.
NOT_READ = {
    "unsafe": ("unsafe-path", "An absolute path or one with '..' is never read."),
    "submodule": ("submodule-not-read", "A git submodule is another repository."),
    "special": ("not-a-regular-file", "Only regular files are read."),
}


def diagnostic(graph, path: str, code: str, message: str, line: int, extractor: str) -> None:
    graph.node(f"diag:{code}:{path}", "diagnostic", {"code": code, "message": message}, (path, line, line, extractor))


class Inventory(Family):
    def emit(self, record, facts, graph):
        if record.kind == "file":
            attrs = {"language": record.language, "size": record.size, "sha256": record.sha256, "binary": record.binary}
            if record.skipped:
                attrs["skipped"] = record.skipped
            graph.node(f"file:{record.path}", "file", attrs, (record.path, 1, max(1, record.lines), INVENTORY))
        if record.kind == "symlink":
            code = "symlink-not-followed" if record.inside else "symlink-escapes-source"
            diagnostic(graph, record.path, code, "A symbolic link is never followed.", 1, INVENTORY)
        elif record.kind in NOT_READ:
            diagnostic(graph, record.path, *NOT_READ[record.kind], 1, INVENTORY)
        elif record.skipped:
            diagnostic(graph, record.path, f"file-{record.skipped}", f"The file was not read ({record.skipped}).", 1, INVENTORY)
        elif "error" in facts:
            message, line = facts["error"]
            diagnostic(graph, record.path, "parse-error", str(message), int(line), record.extractor)

    def finish(self, graph):
        languages: Counter = Counter()
        total = 0
        for record in self.records:
            if record.kind == "file":
                languages[record.language] += 1
                total += record.size
        graph.node("repo:", "repository", {"files": sum(languages.values()), "bytes": total, "languages": dict(sorted(languages.items()))})

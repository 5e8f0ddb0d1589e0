"""A facts document at a glance: the numbers ``show_analysis`` and the admin print."""

from collections import Counter


class Summary:
    """The counts of a graph, taken one node and one edge at a time (the graph is never held whole).

    An element counted with ``sign`` -1 is taken back out, as a re-analysis that splices the document does for
    the elements it replaces; ``state`` and ``from_state`` carry the counts from one analysis to the next.
    """

    def __init__(self):
        self.kinds: Counter = Counter()
        self.modules: Counter = Counter()
        self.dependencies: dict[str, Counter] = {}
        self.services: Counter = Counter()
        self.images: Counter = Counter()
        self.repository = {"files": 0, "bytes": 0, "languages": {}}
        self.imports = self.edges = 0

    def node(self, node: dict, sign: int = 1) -> None:
        kind, attrs = node["kind"], node["attrs"]
        _add(self.kinds, kind, sign)
        if kind == "module" and not attrs.get("missing"):
            _add(self.modules, attrs["language"], sign)
        elif kind == "dependency":
            counts = self.dependencies.setdefault(attrs["ecosystem"], Counter())
            _add(counts, "total", sign)
            _add(counts, "in_repository" if attrs["in_repository"] else "direct" if attrs["direct"] else
                 "transitive" if attrs["locked"] else "undeclared", sign)
            counts["locked"] += sign if attrs["locked"] else 0  # counted (if only as 0) for every ecosystem
            if not counts["total"]:
                del self.dependencies[attrs["ecosystem"]]
        elif kind == "service":
            _add(self.services, attrs["host"], sign)
        elif kind == "image":
            _add(self.images, attrs["ref"], sign)
        elif kind == "repository" and sign > 0 and self.kinds[kind] == 1:
            self.repository = attrs

    def edge(self, edge: dict, sign: int = 1) -> None:
        self.edges += sign
        if edge["kind"] == "imports":
            self.imports += sign

    def state(self) -> dict:
        """Return the counts as JSON-ready values (``from_state`` reads them back)."""
        return {
            "kinds": self.kinds, "modules": self.modules, "dependencies": self.dependencies, "services": self.services,
            "images": self.images, "repository": self.repository, "imports": self.imports, "edges": self.edges,
        }

    @classmethod
    def from_state(cls, state: dict) -> "Summary":
        summary = cls()
        for name in ("kinds", "modules", "services", "images"):
            setattr(summary, name, Counter(state[name]))
        summary.dependencies = {ecosystem: Counter(counts) for ecosystem, counts in state["dependencies"].items()}
        summary.repository, summary.imports, summary.edges = state["repository"], state["imports"], state["edges"]
        return summary

    def result(self) -> dict:
        """Return counts by kind of what the graph holds (integers and sorted names only)."""
        kinds, repository = self.kinds, self.repository
        return {
            "files": repository["files"],
            "bytes": repository["bytes"],
            "languages": repository["languages"],
            "modules": dict(sorted(self.modules.items())),
            "symbols": kinds["class"] + kinds["function"] + kinds["export"],
            "imports": self.imports,
            "dependencies": {ecosystem: dict(sorted(counts.items())) for ecosystem, counts in sorted(self.dependencies.items())},
            "services": sorted(self.services.elements()),
            "iac": {
                "images": sorted(self.images.elements()),
                "compose_services": kinds["compose_service"],
                "terraform": sum(count for kind, count in kinds.items() if kind.startswith("terraform_")),
            },
            "diagnostics": kinds["diagnostic"],
            "nodes": sum(kinds.values()),
            "edges": self.edges,
        }


def _add(counts: Counter, key: str, sign: int) -> None:
    """Count ``key`` in or (``sign`` -1) out; a count that falls to nothing is no key at all, as if never counted."""
    counts[key] += sign
    if not counts[key]:
        del counts[key]


def summarise(nodes, edges) -> dict:
    """Return the summary of a whole graph."""
    summary = Summary()
    for node in nodes:
        summary.node(node)
    for edge in edges:
        summary.edge(edge)
    return summary.result()


def diagnostics(nodes: list) -> list[dict]:
    """Return each diagnostic as ``{"code", "path", "line", "message"}``, in document order."""
    found = []
    for node in nodes:
        if node["kind"] == "diagnostic":
            evidence = node["evidence"][0] if node["evidence"] else {"path": "", "lines": [0, 0]}
            found.append({"code": node["attrs"]["code"], "path": evidence["path"], "line": evidence["lines"][0],
                          "message": node["attrs"]["message"]})
    return found


def describe(summary: dict) -> list[str]:
    """Return the summary as aligned lines for a person to read."""

    def counts(mapping):
        return ", ".join(f"{name} {count}" for name, count in sorted(mapping.items(), key=lambda item: (-item[1], item[0]))) or "-"

    dependencies = []
    for ecosystem, numbers in summary["dependencies"].items():
        parts = ", ".join(f"{key} {numbers[key]}" for key in ("direct", "transitive", "undeclared", "in_repository") if numbers.get(key))
        dependencies.append(f"{ecosystem} {numbers['total']} ({parts})")
    iac = summary["iac"]
    return [
        f"files         {summary['files']} ({summary['bytes']} bytes)",
        f"languages     {counts(summary['languages'])}",
        f"modules       {counts(summary['modules'])}",
        f"symbols       {summary['symbols']}  imports {summary['imports']}",
        f"dependencies  {'; '.join(dependencies) or '-'}",
        f"services      {', '.join(summary['services']) or '-'}",
        f"iac           images {', '.join(iac['images']) or '-'}; compose services {iac['compose_services']}; terraform blocks {iac['terraform']}",
        f"diagnostics   {summary['diagnostics']}",
        f"graph         {summary['nodes']} nodes, {summary['edges']} edges",
    ]

"""A facts document at a glance: the numbers ``show_analysis`` and the admin print."""

from collections import Counter


class Summary:
    """The counts of a graph, taken one node and one edge at a time (the graph is never held whole)."""

    def __init__(self):
        self.kinds: Counter = Counter()
        self.modules: Counter = Counter()
        self.dependencies: dict[str, Counter] = {}
        self.services: list[str] = []
        self.images: list[str] = []
        self.repository = {"files": 0, "bytes": 0, "languages": {}}
        self.imports = self.edges = 0

    def node(self, node: dict) -> None:
        kind, attrs = node["kind"], node["attrs"]
        self.kinds[kind] += 1
        if kind == "module" and not attrs.get("missing"):
            self.modules[attrs["language"]] += 1
        elif kind == "dependency":
            counts = self.dependencies.setdefault(attrs["ecosystem"], Counter())
            counts["total"] += 1
            counts["direct" if attrs["direct"] else ("transitive" if attrs["locked"] else "undeclared")] += 1
            counts["locked"] += 1 if attrs["locked"] else 0
        elif kind == "service":
            self.services.append(attrs["host"])
        elif kind == "image":
            self.images.append(attrs["ref"])
        elif kind == "repository" and self.kinds[kind] == 1:
            self.repository = attrs

    def edge(self, edge: dict) -> None:
        self.edges += 1
        if edge["kind"] == "imports":
            self.imports += 1

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
            "services": sorted(self.services),
            "iac": {
                "images": sorted(self.images),
                "compose_services": kinds["compose_service"],
                "terraform": sum(count for kind, count in kinds.items() if kind.startswith("terraform_")),
            },
            "diagnostics": kinds["diagnostic"],
            "nodes": sum(kinds.values()),
            "edges": self.edges,
        }


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
        parts = ", ".join(f"{key} {numbers[key]}" for key in ("direct", "transitive", "undeclared") if numbers.get(key))
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

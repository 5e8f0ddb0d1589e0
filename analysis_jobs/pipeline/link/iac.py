"""Infrastructure as code: the images files use, compose services, Terraform blocks."""

import posixpath

from .family import Family, evidence


class Iac(Family):
    def emit(self, record, facts, graph):
        file_id = f"file:{record.path}"
        for image, line, stage in facts.get("images", ()):
            target = graph.node(f"img:{image}", "image", {"ref": image})
            graph.edge(file_id, "uses_image", target, {"stage": stage}, evidence(record, line))
        for name, image, build, first, last in facts.get("services", ()):
            service = graph.node(f"compose:{record.path}#{name}", "compose_service", {"name": name, "build": build},
                                 evidence(record, first, last))
            graph.edge(file_id, "defines", service)
            if image:
                target = graph.node(f"img:{image}", "image", {"ref": image})
                graph.edge(service, "uses_image", target, None, evidence(record, first))
        directory = posixpath.dirname(record.path)
        for block, kind, name, source, first, last in facts.get("blocks", ()):
            label = ".".join(part for part in (kind, name) if part)
            node = graph.node(f"tf:{directory}:{block}.{label}", f"terraform_{block}",
                              {"type": kind, "name": name, "source": source}, evidence(record, first, last))
            graph.edge(file_id, "defines", node)

"""Infrastructure as code and where code runs: images, compose services, Terraform blocks, CI jobs and the actions
they use, Kubernetes objects, Helm charts."""

import posixpath

from .family import Family, evidence, extractor_name, whole_file


def _built(record, context: str, dockerfile: str = "") -> str:
    """Return the path of the Dockerfile a compose file's service builds from, "" for none (or an inline one)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(record.path), context, dockerfile)) if dockerfile else ""


def _used_action(graph, uses: str) -> tuple[str, str]:
    """Return the node of the action a ``uses:`` names (``actions/checkout@v4``) and the ref it is pinned at."""
    name, _, ref = uses.partition("@")
    return graph.node(f"action:{name}", "action", {"name": name, "local": name.startswith("./")}), ref


class Iac(Family):
    """A compose service built from a Dockerfile of the tree is ``built_from`` it (``build: ./api``): what the
    Dockerfile uses, the service runs on."""

    def __init__(self, records):
        super().__init__(records)
        self.named: set[str] = set()  # the Dockerfiles the compose services' builds name
        self.built: set[str] = set()  # those of them the tree holds

    def reads(self, record):
        return extractor_name(record) == "compose"

    def learn(self, record, facts):
        self.named.update(built for _name, _image, build, *_lines, dockerfile in facts.get("services", ()) if (built := _built(record, build, dockerfile)))

    def learned(self):
        self.built = self.named & {record.path for record in self.records if extractor_name(record) == "dockerfile"}

    def learnt(self):
        return sorted(self.built)  # only these: adding another Dockerfile still leaves a re-analysis spliced

    def emit(self, record, facts, graph):
        file_id = f"file:{record.path}"
        for image, line, stage, *written in facts.get("images", ()):  # written: the text, where ARG defaults went in
            target = graph.node(f"img:{image}", "image", {"ref": image})
            attrs = {"stage": stage, "written": written[0]} if written else {"stage": stage}
            graph.edge(file_id, "uses_image", target, attrs, evidence(record, line))
        for image, line, stage, via in facts.get("copied_images", ()):  # via: "COPY --from" or "RUN --mount"
            target = graph.node(f"img:{image}", "image", {"ref": image})
            graph.edge(file_id, "uses_image", target, {"stage": stage, "via": via}, evidence(record, line))
        for name, image, build, first, last, *dockerfile in facts.get("services", ()):
            service = graph.node(f"compose:{record.path}#{name}", "compose_service", {"name": name, "build": build},
                                 evidence(record, first, last))
            graph.edge(file_id, "defines", service)
            if image:
                target = graph.node(f"img:{image}", "image", {"ref": image})
                graph.edge(service, "uses_image", target, None, evidence(record, first))
            if (built := _built(record, build, *dockerfile)) in self.built:
                graph.edge(service, "built_from", f"file:{built}", None, evidence(record, first))
        directory = posixpath.dirname(record.path)
        for block, kind, name, source, first, last in facts.get("blocks", ()):
            label = ".".join(part for part in (kind, name) if part)
            node = graph.node(f"tf:{directory}:{block}.{label}", f"terraform_{block}",
                              {"type": kind, "name": name, "source": source}, evidence(record, first, last))
            graph.edge(file_id, "defines", node)
        for name, runs_on, first, last in facts.get("jobs", ()):
            job = graph.node(f"ci:{record.path}#{name}", "ci_job", {"name": name, "runs_on": runs_on}, evidence(record, first, last))
            graph.edge(file_id, "defines", job)
        for uses, job, line in facts.get("actions", ()):
            action, ref = _used_action(graph, uses)
            graph.edge(f"ci:{record.path}#{job}", "uses_action", action, {"ref": ref}, evidence(record, line))
        if "action" in facts:  # the action a workflow of the repository names by its folder (uses: ./.github/actions/x)
            local = "./" + directory
            action = graph.node(f"action:{local}", "action", {"name": local, "local": True, "using": facts["action"]}, whole_file(record))
            graph.edge(file_id, "defines", action)
            for uses, line in facts["action_uses"]:
                used, ref = _used_action(graph, uses)
                graph.edge(action, "uses_action", used, {"ref": ref}, evidence(record, line))
            for image, line in facts["action_images"]:
                graph.edge(action, "uses_image", graph.node(f"img:{image}", "image", {"ref": image}), None, evidence(record, line))
        for image, job, line in facts.get("job_images", ()):
            target = graph.node(f"img:{image}", "image", {"ref": image})
            graph.edge(f"ci:{record.path}#{job}", "uses_image", target, None, evidence(record, line))
        for kind, name, namespace, api, first, last in facts.get("objects", ()):
            node = graph.node(f"k8s:{record.path}#{kind}/{namespace}/{name}", "k8s_object",
                              {"kind": kind, "name": name, "namespace": namespace, "api_version": api}, evidence(record, first, last))
            graph.edge(file_id, "defines", node)
        for image, label, line in facts.get("object_images", ()):
            target = graph.node(f"img:{image}", "image", {"ref": image})
            graph.edge(f"k8s:{record.path}#{label}", "uses_image", target, None, evidence(record, line))
        if "chart" in facts:
            name, version = facts["chart"]
            chart = graph.node(f"helm:{directory or '.'}", "helm_chart", {"name": name, "version": version}, whole_file(record))
            graph.edge(file_id, "defines", chart)

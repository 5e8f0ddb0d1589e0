"""Infrastructure as code and CI, read through the whole pipeline from small trees shaped like real repositories."""

from tests.pipeline_support import analyse, write_tree


def evidence(node_or_edge):
    return [(item["path"], item["lines"], item["extractor"].split("@")[0]) for item in node_or_edge["evidence"]]


def edge_rows(result, kind):
    return sorted((edge["src"], edge["dst"], edge["attrs"], evidence(edge)) for edge in result.edges if edge["kind"] == kind)


# -- Dockerfile ------------------------------------------------------------------------------------------------


def test_a_dockerfile_without_a_final_newline_parses_cleanly(tmp_path):
    root = write_tree(tmp_path / "r", {
        "Dockerfile": b"FROM python:3.12-slim AS base\nRUN pip install \\\n  gunicorn\nCMD [\"gunicorn\"]",
        "worker.dockerfile": b"FROM base\r\nFROM redis:7\r\nRUN true",
        "broken/Dockerfile": b"FROM alpine:3.20\nRUN echo hi\nONBUILD\n",
    })
    result = analyse(root)
    assert result.of_kind("diagnostic").keys() == {"diag:parse-error:broken/Dockerfile"}
    assert edge_rows(result, "uses_image") == [
        ("file:Dockerfile", "img:python:3.12-slim", {"stage": "base"}, [("Dockerfile", [1, 1], "dockerfile")]),
        ("file:broken/Dockerfile", "img:alpine:3.20", {"stage": ""}, [("broken/Dockerfile", [1, 1], "dockerfile")]),
        ("file:worker.dockerfile", "img:base", {"stage": ""}, [("worker.dockerfile", [1, 1], "dockerfile")]),
        ("file:worker.dockerfile", "img:redis:7", {"stage": ""}, [("worker.dockerfile", [2, 2], "dockerfile")]),
    ]

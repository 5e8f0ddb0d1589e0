"""Infrastructure as code and CI, read through the whole pipeline from small trees shaped like real repositories."""

from tests.pipeline_support import analyse, write_tree


def evidence(node_or_edge):
    return [(item["path"], item["lines"], item["extractor"].split("@")[0]) for item in node_or_edge["evidence"]]


def edge_rows(result, kind):
    return sorted((edge["src"], edge["dst"], edge["attrs"], evidence(edge)) for edge in result.edges if edge["kind"] == kind)


# -- Dockerfile ------------------------------------------------------------------------------------------------


def test_a_base_image_takes_the_arg_defaults_declared_before_the_first_from(tmp_path):
    # kopf's shape: the Python version and variant are global ARGs, so the image is python:3.15-slim unless a
    # build says otherwise; the text as written stays on the edge.
    root = write_tree(tmp_path / "r", {
        "Dockerfile": (
            "ARG PYTHON_VERSION=3.15\n"
            'ARG VARIANT="slim"\n'
            "ARG REGISTRY\n"
            "FROM python:${PYTHON_VERSION}-${VARIANT} AS Builder\n"
            "ARG LATE=9\n"  # after the first FROM: a stage's own ARG, which no FROM sees
            "FROM ${MIRROR:-docker.io}/library/redis:7\n"
            "FROM alpine:$LATE\n"
            "FROM $REGISTRY/app:${VARIANT:+stable}\n"  # REGISTRY has no default: only the build knows
            "FROM builder\n"  # the stage, named without its case
        ),
    })
    assert edge_rows(analyse(root), "uses_image") == [
        ("file:Dockerfile", "img:$REGISTRY/app:${VARIANT:+stable}", {"stage": ""}, [("Dockerfile", [8, 8], "dockerfile")]),
        ("file:Dockerfile", "img:alpine:$LATE", {"stage": ""}, [("Dockerfile", [7, 7], "dockerfile")]),
        ("file:Dockerfile", "img:docker.io/library/redis:7", {"stage": "", "written": "${MIRROR:-docker.io}/library/redis:7"},
         [("Dockerfile", [6, 6], "dockerfile")]),
        ("file:Dockerfile", "img:python:3.15-slim", {"stage": "Builder", "written": "python:${PYTHON_VERSION}-${VARIANT}"},
         [("Dockerfile", [4, 4], "dockerfile")]),
    ]


def test_an_image_a_stage_copies_or_mounts_files_from_is_used_too(tmp_path):
    # uv's documented shape (COPY --from=ghcr.io/astral-sh/uv), a bind mount from an image, and copies from
    # stages by name (in another case) and by index, which are no images.
    root = write_tree(tmp_path / "r", {
        "Dockerfile": (
            "FROM python:3.12-slim AS Build\n"
            "COPY --from=ghcr.io/astral-sh/uv:0.5.11 /uv /uvx /bin/\n"
            "RUN --mount=type=bind,from=busybox:1.36,source=/bin,target=/x ls /x\n"
            "COPY --from=$TOOLS /t /t\n"  # the stage's ARG: only a build knows it
            "FROM scratch\n"
            "COPY --from=build /app /app\n"
            "COPY --from=0 /bin/sh /bin/sh\n"
            "COPY --chown=1:1 --from=nginx:1.27 /etc/nginx /etc/nginx\n"
        ),
    })
    assert edge_rows(analyse(root), "uses_image") == [
        ("file:Dockerfile", "img:busybox:1.36", {"stage": "Build", "via": "RUN --mount"}, [("Dockerfile", [3, 3], "dockerfile")]),
        ("file:Dockerfile", "img:ghcr.io/astral-sh/uv:0.5.11", {"stage": "Build", "via": "COPY --from"},
         [("Dockerfile", [2, 2], "dockerfile")]),
        ("file:Dockerfile", "img:nginx:1.27", {"stage": "", "via": "COPY --from"}, [("Dockerfile", [8, 8], "dockerfile")]),
        ("file:Dockerfile", "img:python:3.12-slim", {"stage": "Build"}, [("Dockerfile", [1, 1], "dockerfile")]),
    ]


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

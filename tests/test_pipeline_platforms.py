"""Where a repository runs: GitHub Actions workflows, Kubernetes manifests, Helm charts, and what its Terraform
requires and locks; each from a small fixture shaped like a real one."""

from tests.pipeline_support import analyse, write_tree

WORKFLOW = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    container: python:3.12-slim
    services:
      db:
        image: postgres:16
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@0a5c61591373683505ea898e09a3ea4f39ef2b9c
      - uses: ./.github/actions/lint
      - uses: docker://alpine:3.19
      - run: pytest
  release:
    uses: acme/workflows/.github/workflows/release.yml@main
"""


def test_a_workflow_gives_its_jobs_their_actions_at_their_ref_and_their_images(tmp_path):
    result = analyse(write_tree(tmp_path / "r", {".github/workflows/ci.yml": WORKFLOW, "docs/ci.yml": WORKFLOW}))
    jobs = result.of_kind("ci_job")
    assert sorted(jobs) == ["ci:.github/workflows/ci.yml#release", "ci:.github/workflows/ci.yml#test"]
    test = "ci:.github/workflows/ci.yml#test"
    assert jobs[test]["attrs"] == {"name": "test", "runs_on": "ubuntu-latest"}
    assert jobs[test]["evidence"][0]["lines"] == [4, 15]
    uses = {edge["dst"]: edge["attrs"]["ref"] for edge in result.edges_from(test, "uses_action")}
    assert uses == {
        "action:actions/checkout": "v4", "action:actions/setup-python": "0a5c61591373683505ea898e09a3ea4f39ef2b9c",
        "action:./.github/actions/lint": "",
    }
    assert result.nodes["action:./.github/actions/lint"]["attrs"]["local"] is True
    assert result.targets(test, "uses_image") == ["img:alpine:3.19", "img:postgres:16", "img:python:3.12-slim"]
    assert result.targets("ci:.github/workflows/ci.yml#release", "uses_action") == ["action:acme/workflows/.github/workflows/release.yml"]


def test_kubernetes_objects_and_their_container_images(tmp_path):
    manifest = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  template:\n    spec:\n"
        "      initContainers:\n        - name: migrate\n          image: shop/migrate:1.2\n"
        "      containers:\n        - name: web\n          image: shop/web:1.2\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n---\n"
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\nspec:\n  jobTemplate:\n    spec:\n      template:\n"
        "        spec:\n          containers:\n            - name: job\n              image: shop/batch@sha256:abc\n"
    )
    result = analyse(write_tree(tmp_path / "r", {"deploy/app.yaml": manifest, "mkdocs.yml": "site_name: docs\n"}))
    objects = {node["attrs"]["kind"]: node for node in result.of_kind("k8s_object").values()}
    assert sorted(objects) == ["CronJob", "Deployment", "Service"]
    deployment = "k8s:deploy/app.yaml#Deployment/shop/web"
    assert objects["Deployment"]["evidence"][0]["lines"] == [1, 14]
    assert result.targets(deployment, "uses_image") == ["img:shop/migrate:1.2", "img:shop/web:1.2"]
    assert result.targets("k8s:deploy/app.yaml#CronJob//nightly", "uses_image") == ["img:shop/batch@sha256:abc"]
    assert "diag:parse-error:mkdocs.yml" not in result.nodes and not result.edges_from("file:mkdocs.yml", "defines")


def test_a_helm_chart_its_dependencies_and_its_templates(tmp_path):
    root = write_tree(tmp_path / "r", {
        "charts/shop/Chart.yaml": (
            "apiVersion: v2\nname: shop\nversion: 0.3.1\ndependencies:\n"
            "  - name: redis\n    version: 18.x.x\n    repository: https://charts.bitnami.com/bitnami\n"
        ),
        "charts/shop/templates/deployment.yaml": (
            "{{- if .Values.enabled }}\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
            "  name: {{ include \"shop.fullname\" . }}\nspec:\n  template:\n    spec:\n      containers:\n"
            "        - name: app\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n"
            "        - name: sidecar\n          image: envoyproxy/envoy:v1.29\n{{- end }}\n"
        ),
        "broken.yaml": "key: [unclosed\n",
    })
    result = analyse(root)
    assert result.nodes["helm:charts/shop"]["attrs"] == {"name": "shop", "version": "0.3.1"}
    (edge,) = result.edges_from("file:charts/shop/Chart.yaml", "declares")
    assert (edge["dst"], edge["attrs"]["spec"]) == ("dep:helm:redis", "18.x.x")
    (deployment,) = result.of_kind("k8s_object")
    assert deployment == "k8s:charts/shop/templates/deployment.yaml#Deployment//*"
    assert result.targets(deployment, "uses_image") == ["img:envoyproxy/envoy:v1.29"]  # a templated image is not guessed
    assert "diag:parse-error:charts/shop/templates/deployment.yaml" not in result.nodes
    assert "diag:parse-error:broken.yaml" in result.nodes


def test_terraform_variables_outputs_required_providers_modules_and_lock(tmp_path):
    root = write_tree(tmp_path / "infra", {
        "versions.tf": (
            "terraform {\n  required_version = \">= 1.5\"\n  required_providers {\n"
            "    aws = {\n      source  = \"hashicorp/aws\"\n      version = \"~> 5.0\"\n    }\n"
            "    random = {\n      source = \"registry.terraform.io/hashicorp/random\"\n    }\n  }\n}\n"
        ),
        "main.tf": (
            "variable \"region\" {\n  type = string\n}\n\n"
            "module \"vpc\" {\n  source  = \"terraform-aws-modules/vpc/aws\"\n  version = \"5.5.1\"\n}\n\n"
            "module \"local\" {\n  source = \"./modules/local\"\n}\n\n"
            "output \"vpc_id\" {\n  value = module.vpc.vpc_id\n}\n"
        ),
        ".terraform.lock.hcl": (
            "provider \"registry.terraform.io/hashicorp/aws\" {\n  version     = \"5.31.0\"\n  constraints = \"~> 5.0\"\n}\n"
        ),
    })
    result = analyse(root)
    kinds = {node["kind"] for node in result.nodes.values() if node["kind"].startswith("terraform_")}
    assert {"terraform_variable", "terraform_output", "terraform_module"} <= kinds
    declared = {edge["dst"]: (edge["attrs"]["spec"], edge["attrs"]["scope"]) for edge in result.edges if edge["kind"] == "declares"}
    assert declared == {
        "dep:terraform:hashicorp/aws": ("~> 5.0", "provider"), "dep:terraform:hashicorp/random": ("", "provider"),
        "dep:terraform:module:terraform-aws-modules/vpc/aws": ("5.5.1", "module"),
    }
    (lock,) = result.edges_from("file:.terraform.lock.hcl", "locks")
    assert (lock["dst"], lock["attrs"]["version"]) == ("dep:terraform:hashicorp/aws", "5.31.0")
    assert result.nodes["dep:terraform:hashicorp/aws"]["attrs"]["locked"] is True


def test_a_repositorys_own_action_gives_the_actions_and_images_it_uses(tmp_path):
    root = write_tree(tmp_path / "r", {
        ".github/workflows/ci.yml": WORKFLOW,
        ".github/actions/lint/action.yml": (
            "name: lint\nruns:\n  using: composite\n  steps:\n    - uses: actions/setup-node@v4\n"
            "    - uses: docker://hadolint/hadolint:2.12.0\n    - run: npm run lint\n      shell: bash\n"
        ),
        "tools/notes/action.yml": "title: not an action\n",
    })
    result = analyse(root)
    lint = "action:./.github/actions/lint"
    assert result.nodes[lint]["attrs"] == {"local": True, "name": "./.github/actions/lint", "using": "composite"}
    assert result.targets("file:.github/actions/lint/action.yml", "defines") == [lint]
    assert {edge["dst"]: edge["attrs"]["ref"] for edge in result.edges_from(lint, "uses_action")} == {"action:actions/setup-node": "v4"}
    assert result.targets(lint, "uses_image") == ["img:hadolint/hadolint:2.12.0"]
    assert result.targets("file:tools/notes/action.yml", "defines") == []

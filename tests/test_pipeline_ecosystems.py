"""The other ecosystems' manifests and lockfiles, and setup.py, each from a small fixture shaped like a real one."""

import pytest

from tests.pipeline_support import analyse, write_tree


def declared(result, path):
    """``{dependency: (spec, scope, line)}`` of what ``path`` declares."""
    return {
        edge["dst"]: (edge["attrs"]["spec"], edge["attrs"]["scope"], edge["evidence"][0]["lines"][0])
        for edge in result.edges_from(f"file:{path}", "declares")
    }


def locked(result, path):
    """``{dependency: (version, line)}`` of what ``path`` locks."""
    return {
        edge["dst"]: (edge["attrs"]["version"], edge["evidence"][0]["lines"][0])
        for edge in result.edges_from(f"file:{path}", "locks")
    }


def test_setup_py_literal_requirements_are_read_never_run(tmp_path):
    root = write_tree(tmp_path / "r", {
        "setup.py": (
            "import sys\n"
            "from setuptools import setup\n"
            "sys.exit('executed')\n"  # never run
            "setup(\n"
            "    name='app',\n"
            "    install_requires=['requests>=2', 'Django~=5.2'],\n"
            "    extras_require={\n"
            "        'yaml': ['PyYAML'],\n"
            "    },\n"
            "    tests_require=computed(),\n"
            ")\n"
        ),
        "tools/dev.requirements.txt": "pytest==8\n",
        "requirements/base.in": "celery\n",
        "requirements/extras/redis.txt": "redis>=4.5.2\n",  # celery's shape: one file per extra
        "requirements/test/lint.txt": "ruff\n",
    })
    result = analyse(root)
    assert declared(result, "setup.py") == {
        "dep:pypi:requests": (">=2", "main", 6), "dep:pypi:django": ("~=5.2", "main", 6),
        "dep:pypi:pyyaml": ("", "optional:yaml", 8),
    }
    assert declared(result, "tools/dev.requirements.txt") == {"dep:pypi:pytest": ("==8", "dev", 1)}
    assert declared(result, "requirements/base.in") == {"dep:pypi:celery": ("", "main", 1)}
    assert declared(result, "requirements/extras/redis.txt") == {"dep:pypi:redis": (">=4.5.2", "optional:redis", 1)}
    assert declared(result, "requirements/test/lint.txt") == {"dep:pypi:ruff": ("", "dev", 1)}


def test_setup_py_reads_requirements_from_names_bound_once_to_a_literal(tmp_path):
    # Requests' shape: the lists are bound to names above the call, and tests_require names its own.
    root = write_tree(tmp_path / "r", {
        "setup.py": (
            "from setuptools import setup\n"
            "maybe = ['first']\n"
            "if flag:\n"
            "    maybe = ['second']\n"  # bound twice: which list setup() sees depends on running the file
            "requires = [\n"
            "    'charset_normalizer>=2,<4',\n"
            "    'idna>=2.5,<4',\n"
            "]\n"
            "test_requirements: list = ['pytest-mock']\n"
            "extras = {'socks': ['PySocks>=1.5.6, !=1.5.7'], 'either': maybe}\n"
            "setup(install_requires=requires, tests_require=test_requirements, extras_require=extras)\n"
        ),
    })
    assert declared(analyse(root), "setup.py") == {
        "dep:pypi:charset-normalizer": ("<4,>=2", "main", 6), "dep:pypi:idna": ("<4,>=2.5", "main", 7),
        "dep:pypi:pytest-mock": ("", "dev", 9), "dep:pypi:pysocks": ("!=1.5.7,>=1.5.6", "optional:socks", 10),
    }


def test_go_modules_declared_indirect_and_summed(tmp_path):
    root = write_tree(tmp_path / "svc", {
        "go.mod": (
            "module example.com/svc\n\ngo 1.22\n\n"
            "require github.com/spf13/cobra v1.8.0\n\n"
            "require (\n"
            "\tgithub.com/google/uuid v1.6.0\n"
            "\tgolang.org/x/sys v0.20.0 // indirect\n"
            ")\n\n"
            "replace github.com/google/uuid => ../uuid\n\n"
            "replace (\n\tgithub.com/spf13/cobra v1.8.0 => github.com/acme/cobra v1.8.1-fix\n)\n"
        ),
        "go.sum": (
            "github.com/google/uuid v1.6.0 h1:abc=\n"
            "github.com/google/uuid v1.6.0/go.mod h1:def=\n"
            "golang.org/x/sys v0.20.0/go.mod h1:ghi=\n"
        ),
    })
    result = analyse(root)
    assert declared(result, "go.mod") == {
        "dep:go:github.com/spf13/cobra": ("v1.8.0", "main", 5), "dep:go:github.com/google/uuid": ("v1.6.0", "main", 8),
    }
    assert locked(result, "go.mod") == {"dep:go:golang.org/x/sys": ("v0.20.0", 9)}
    replaced = {edge["dst"]: edge["attrs"].get("replaced_by") for edge in result.edges_from("file:go.mod", "declares")}
    assert replaced == {"dep:go:github.com/spf13/cobra": "github.com/acme/cobra@v1.8.1-fix", "dep:go:github.com/google/uuid": "../uuid"}
    assert locked(result, "go.sum") == {"dep:go:github.com/google/uuid": ("v1.6.0", 1), "dep:go:golang.org/x/sys": ("v0.20.0", 3)}
    assert result.nodes["dep:go:golang.org/x/sys"]["attrs"] == {
        "declared": False, "direct": False, "ecosystem": "go", "in_repository": False, "locked": True, "name": "golang.org/x/sys",
    }


def test_cargo_manifest_and_lock(tmp_path):
    root = write_tree(tmp_path / "crate", {
        "Cargo.toml": (
            '[package]\nname = "tool"\nversion = "0.1.0"\n\n'
            '[dependencies]\nserde = { version = "1", features = ["derive"] }\nhelpers = { path = "../helpers" }\n'
            'rand_core = { package = "rand", version = "0.8" }\n\n'
            '[dev-dependencies]\ntokio = "1.37"\n\n'
            "[target.'cfg(windows)'.dependencies]\nwinapi = \"0.3\"\n"
        ),
        "Cargo.lock": (
            'version = 3\n\n[[package]]\nname = "tool"\nversion = "0.1.0"\n\n'
            '[[package]]\nname = "serde"\nversion = "1.0.200"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\n'
        ),
    })
    result = analyse(root)
    assert declared(result, "Cargo.toml") == {
        "dep:cargo:serde": ("1", "main", 6), "dep:cargo:helpers": ("path", "main", 7), "dep:cargo:rand": ("0.8", "main", 8),
        "dep:cargo:tokio": ("1.37", "dev", 11), "dep:cargo:winapi": ("0.3", "main:cfg(windows)", 14),
    }
    assert locked(result, "Cargo.lock") == {"dep:cargo:serde": ("1.0.200", 8)}  # the crate itself is not a dependency


def test_maven_pom_and_gradle_catalog(tmp_path):
    root = write_tree(tmp_path / "java", {
        "pom.xml": (
            '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
            "  <dependencyManagement><dependencies>\n"
            "    <dependency><groupId>org.springframework.boot</groupId><artifactId>spring-boot-dependencies</artifactId><version>3.2.0</version></dependency>\n"
            "  </dependencies></dependencyManagement>\n"
            "  <dependencies>\n"
            "    <dependency>\n"
            "      <groupId>junit</groupId>\n"
            "      <artifactId>junit</artifactId>\n"
            "      <version>4.13.2</version>\n"
            "      <scope>test</scope>\n"
            "    </dependency>\n"
            "  </dependencies>\n"
            "</project>\n"
        ),
        "gradle/libs.versions.toml": (
            '[versions]\nokhttp = "4.12.0"\n\n[libraries]\n'
            'okhttp = { module = "com.squareup.okhttp3:okhttp", version.ref = "okhttp" }\n'
            'guava = "com.google.guava:guava:33.0.0-jre"\n'
        ),
    })
    result = analyse(root)
    assert declared(result, "pom.xml") == {
        "dep:maven:org.springframework.boot:spring-boot-dependencies": ("3.2.0", "managed", 3),
        "dep:maven:junit:junit": ("4.13.2", "test", 8),
    }
    assert declared(result, "gradle/libs.versions.toml") == {
        "dep:maven:com.squareup.okhttp3:okhttp": ("4.12.0", "main", 5),
        "dep:maven:com.google.guava:guava": ("33.0.0-jre", "main", 6),
    }


def test_an_xml_manifest_with_entities_is_a_diagnostic_not_expanded(tmp_path):
    bomb = '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa">]><project>&a;</project>\n'
    result = analyse(write_tree(tmp_path / "r", {"pom.xml": bomb}))
    assert result.nodes["diag:parse-error:pom.xml"]["attrs"]["code"] == "parse-error"


def test_dotnet_project_and_lock(tmp_path):
    root = write_tree(tmp_path / "net", {
        "src/App/App.csproj": (
            '<Project Sdk="Microsoft.NET.Sdk">\n  <ItemGroup>\n'
            '    <PackageReference Include="Newtonsoft.Json" Version="13.0.3" />\n'
            '    <PackageReference Include="Serilog">\n      <Version>3.1.1</Version>\n    </PackageReference>\n'
            "  </ItemGroup>\n</Project>\n"
        ),
        "src/App/packages.lock.json": (
            '{\n  "version": 1,\n  "dependencies": {\n    "net8.0": {\n'
            '      "Newtonsoft.Json": {"type": "Direct", "requested": "[13.0.3, )", "resolved": "13.0.3"},\n'
            '      "System.Memory": {"type": "Transitive", "resolved": "4.5.5"},\n'
            '      "Lib": {"type": "Project"}\n    }\n  }\n}\n'
        ),
    })
    result = analyse(root)
    assert declared(result, "src/App/App.csproj") == {"dep:nuget:newtonsoft.json": ("13.0.3", "main", 3), "dep:nuget:serilog": ("3.1.1", "main", 4)}
    assert locked(result, "src/App/packages.lock.json") == {"dep:nuget:newtonsoft.json": ("13.0.3", 5), "dep:nuget:system.memory": ("4.5.5", 6)}
    assert result.nodes["dep:nuget:system.memory"]["attrs"]["direct"] is False


def test_dotnet_central_package_versions_give_the_projects_theirs(tmp_path):
    # Central Package Management: the projects reference packages without versions, Directory.Packages.props
    # holds them; Directory.Build.props gives every project an analyzer.
    root = write_tree(tmp_path / "net", {
        "Directory.Packages.props": (
            "<Project>\n  <PropertyGroup><ManagePackageVersionsCentrally>true</ManagePackageVersionsCentrally></PropertyGroup>\n"
            '  <ItemGroup>\n    <PackageVersion Include="Serilog" Version="3.1.1" />\n'
            '    <PackageVersion Include="xunit" Version="2.9.0" />\n'
            '    <GlobalPackageReference Include="Nerdbank.GitVersioning" Version="3.6.133" />\n  </ItemGroup>\n</Project>\n'
        ),
        "Directory.Build.props": '<Project><ItemGroup><PackageReference Include="StyleCop.Analyzers" Version="1.1.118" /></ItemGroup></Project>\n',
        "src/App/App.csproj": (
            '<Project Sdk="Microsoft.NET.Sdk"><ItemGroup>\n  <PackageReference Include="Serilog" />\n'
            '  <PackageReference Include="xunit" VersionOverride="2.8.1" />\n  <PackageReference Include="Polly" />\n</ItemGroup></Project>\n'
        ),
    })
    result = analyse(root)
    assert declared(result, "Directory.Packages.props") == {
        "dep:nuget:serilog": ("3.1.1", "managed", 4), "dep:nuget:xunit": ("2.9.0", "managed", 5),
        "dep:nuget:nerdbank.gitversioning": ("3.6.133", "main", 6),
    }
    assert declared(result, "Directory.Build.props") == {"dep:nuget:stylecop.analyzers": ("1.1.118", "main", 1)}
    attrs = {edge["dst"]: edge["attrs"] for edge in result.edges_from("file:src/App/App.csproj", "declares")}
    assert attrs == {
        "dep:nuget:serilog": {"spec": "3.1.1", "scope": "main", "managed": True},
        "dep:nuget:xunit": {"spec": "2.8.1", "scope": "main"},  # its own VersionOverride
        "dep:nuget:polly": {"spec": "", "scope": "main"},  # no central version: as written
    }


def test_composer_manifest_and_lock(tmp_path):
    root = write_tree(tmp_path / "php", {
        "composer.json": '{\n  "require": {\n    "php": ">=8.1",\n    "ext-json": "*",\n    "Monolog/Monolog": "^3.0"\n  },\n  "require-dev": {\n    "phpunit/phpunit": "^10"\n  }\n}\n',
        "composer.lock": '{\n  "packages": [\n    {\n      "name": "monolog/monolog",\n      "version": "3.5.0"\n    }\n  ],\n  "packages-dev": []\n}\n',
    })
    result = analyse(root)
    assert declared(result, "composer.json") == {"dep:composer:monolog/monolog": ("^3.0", "main", 5), "dep:composer:phpunit/phpunit": ("^10", "dev", 8)}
    assert locked(result, "composer.lock") == {"dep:composer:monolog/monolog": ("3.5.0", 4)}


def test_gemfile_lock_gems_direct_or_transitive(tmp_path):
    root = write_tree(tmp_path / "rb", {
        "Gemfile.lock": (
            "GEM\n  remote: https://rubygems.org/\n  specs:\n"
            "    rack (3.0.9)\n    rails (7.1.3)\n      rack (>= 2.2.4)\n    nokogiri (1.16.2-x86_64-linux)\n\n"
            "PLATFORMS\n  x86_64-linux\n\nDEPENDENCIES\n  rails (~> 7.1)\n  nokogiri\n\nBUNDLED WITH\n   2.5.6\n"
        ),
    })
    result = analyse(root)
    assert locked(result, "Gemfile.lock") == {
        "dep:gem:rack": ("3.0.9", 4), "dep:gem:rails": ("7.1.3", 5), "dep:gem:nokogiri": ("1.16.2-x86_64-linux", 7),
    }
    direct = {name: result.nodes[f"dep:gem:{name}"]["attrs"]["direct"] for name in ("rack", "rails", "nokogiri")}
    assert direct == {"rack": False, "rails": True, "nokogiri": True}


def test_gemfile_lock_gems_from_git_are_locked_and_the_repositorys_own_are_not(tmp_path):
    # The shape of an app that pins a gem to a git revision and of a gem whose Gemfile says ``gemspec``.
    root = write_tree(tmp_path / "rb", {
        "Gemfile.lock": (
            "GIT\n  remote: https://github.com/rails/rails.git\n  revision: 4b8d0e8\n  branch: main\n  specs:\n"
            "    actionpack (7.2.0.alpha)\n      rack (>= 2.2.4)\n    rails (7.2.0.alpha)\n      actionpack (= 7.2.0.alpha)\n\n"
            "PATH\n  remote: .\n  specs:\n    mygem (0.1.0)\n      rack (>= 2)\n\n"
            "GEM\n  remote: https://rubygems.org/\n  specs:\n    rack (3.0.9)\n\n"
            "PLATFORMS\n  ruby\n\nDEPENDENCIES\n  mygem!\n  rails!\n\nBUNDLED WITH\n   2.5.6\n"
        ),
    })
    result = analyse(root)
    assert locked(result, "Gemfile.lock") == {
        "dep:gem:actionpack": ("7.2.0.alpha", 6), "dep:gem:rails": ("7.2.0.alpha", 8), "dep:gem:rack": ("3.0.9", 20),
    }
    assert result.nodes["dep:gem:rails"]["attrs"]["direct"] is True
    assert result.nodes["dep:gem:actionpack"]["attrs"]["direct"] is False
    assert "dep:gem:mygem" not in result.nodes


def test_a_monorepos_own_packages_are_dependencies_in_the_repository(tmp_path):
    # Each ecosystem's way for one package of a monorepo to depend on another of the same repository.
    root = write_tree(tmp_path / "mono", {
        "crates/core/Cargo.toml": '[package]\nname = "acme-core"\nversion = "0.1.0"\n',
        "crates/cli/Cargo.toml": '[package]\nname = "acme-cli"\n\n[dependencies]\nacme-core = { path = "../core" }\nserde = "1"\n',
        "packages/ui/package.json": '{"name": "@acme/ui"}\n',
        "apps/web/package.json": '{"name": "web", "dependencies": {"@acme/ui": "workspace:*", "react": "^18"}}\n',
        "libs/common/pyproject.toml": '[project]\nname = "Acme_Common"\n',
        "libs/legacy/setup.py": 'from setuptools import setup\nsetup(name="acme-legacy")\n',
        "libs/old/setup.cfg": "[metadata]\nname = acme.old\n",
        "services/api/requirements.txt": "acme-common\nacme-legacy\nacme-old\nhttpx\n",
        "go/lib/go.mod": "module example.com/acme/lib\n\ngo 1.22\n",
        "go/svc/go.mod": "module example.com/acme/svc\n\nrequire example.com/acme/lib v0.0.0\n\nreplace example.com/acme/lib => ../lib\n",
        "java/pom.xml": "<project><groupId>com.acme</groupId><artifactId>parent</artifactId></project>\n",
        "java/core/pom.xml": "<project><parent><groupId>com.acme</groupId><artifactId>parent</artifactId></parent><artifactId>core</artifactId></project>\n",
        "java/app/pom.xml": (
            "<project><parent><groupId>com.acme</groupId><artifactId>parent</artifactId></parent><artifactId>app</artifactId>"
            "<dependencies><dependency><groupId>com.acme</groupId><artifactId>core</artifactId></dependency></dependencies></project>\n"
        ),
        "php/a/composer.json": '{"name": "Acme/A"}\n',
        "php/b/composer.json": '{"name": "acme/b", "require": {"acme/a": "@dev", "monolog/monolog": "^3"}}\n',
        "charts/common/Chart.yaml": "apiVersion: v2\nname: common\nversion: 1.0.0\n",
        "charts/app/Chart.yaml": (
            "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: common\n    version: 1.0.0\n"
            "    repository: file://../common\n  - name: redis\n    version: 19.0.0\n"
        ),
    })
    result = analyse(root)
    inside = {node_id for node_id, node in result.nodes.items() if node["kind"] == "dependency" and node["attrs"]["in_repository"]}
    assert inside == {  # a package nothing depends on is no dependency: no node for acme-cli, web or the svc module
        "dep:cargo:acme-core", "dep:npm:@acme/ui", "dep:pypi:acme-common", "dep:pypi:acme-legacy", "dep:pypi:acme-old",
        "dep:go:example.com/acme/lib", "dep:maven:com.acme:core", "dep:composer:acme/a", "dep:helm:common",
    }
    outside = {node_id for node_id, node in result.nodes.items() if node["kind"] == "dependency"} - inside
    assert outside == {"dep:cargo:serde", "dep:npm:react", "dep:pypi:httpx", "dep:composer:monolog/monolog", "dep:helm:redis"}
    # The summary counts a monorepo's own packages apart from what it depends on.
    assert result.summary["dependencies"]["cargo"] == {"in_repository": 1, "direct": 1, "locked": 0, "total": 2}
    assert result.summary["dependencies"]["pypi"] == {"in_repository": 3, "direct": 1, "locked": 0, "total": 4}


@pytest.mark.parametrize(("path", "broken"), [
    ("Cargo.toml", "[dependencies\n"), ("composer.json", "{"), ("App.csproj", "<Project>"), ("setup.py", "setup(\n"),
    ("pom.xml", "<project><dependencies>"),
])
def test_a_malformed_manifest_of_any_ecosystem_is_a_diagnostic(tmp_path, path, broken):
    result = analyse(write_tree(tmp_path / "r", {path: broken}))
    assert f"diag:parse-error:{path}" in result.nodes


def test_a_spec_left_to_the_workspace_or_the_parent_takes_its_range_from_there(tmp_path):
    # polars' crates declare serde = { workspace = true }; a Maven module leaves <version> to its parent's
    # <dependencyManagement>, whose versions are ${properties}.
    root = write_tree(tmp_path / "mono", {
        "Cargo.toml": (
            '[workspace]\nmembers = ["crates/*"]\n\n[workspace.dependencies]\n'
            'serde = { version = "1.0.200", features = ["derive"] }\nanyhow = "1"\nmemmap = { package = "memmap2", version = "0.9" }\n'
        ),
        "crates/core/Cargo.toml": (
            '[package]\nname = "core"\n\n[dependencies]\nserde = { workspace = true }\nanyhow.workspace = true\n'
            'tokio = { workspace = true }\nregex = "1.10"\nmemmap = { workspace = true }\n'
        ),
        "java/pom.xml": (
            "<project><groupId>com.acme</groupId><artifactId>parent</artifactId><version>2.4.0</version>\n"
            "  <properties><junit.version>5.10.2</junit.version><jackson>2.17.0</jackson></properties>\n"
            "  <dependencyManagement><dependencies>\n"
            "    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId><version>${junit.version}</version></dependency>\n"
            "  </dependencies></dependencyManagement>\n"
            "  <dependencies>\n"
            "    <dependency><groupId>com.fasterxml.jackson.core</groupId><artifactId>jackson-core</artifactId><version>${jackson}</version></dependency>\n"
            "  </dependencies>\n"
            "</project>\n"
        ),
        "java/modules/app/pom.xml": (
            "<project><parent><groupId>com.acme</groupId><artifactId>parent</artifactId><version>2.4.0</version></parent>\n"
            "  <artifactId>app</artifactId>\n  <dependencies>\n"
            "    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId><scope>test</scope></dependency>\n"
            "    <dependency><groupId>${project.groupId}</groupId><artifactId>core</artifactId><version>${project.version}</version></dependency>\n"
            "    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>${slf4j.version}</version></dependency>\n"
            "    <dependency><groupId>com.google.guava</groupId><artifactId>guava</artifactId></dependency>\n"
            "  </dependencies>\n</project>\n"
        ),
    })
    result = analyse(root)
    attrs = {edge["dst"]: edge["attrs"] for edge in result.edges_from("file:crates/core/Cargo.toml", "declares")}
    assert attrs == {
        "dep:cargo:serde": {"spec": "1.0.200", "scope": "main", "workspace": True},
        "dep:cargo:anyhow": {"spec": "1", "scope": "main", "workspace": True},
        "dep:cargo:tokio": {"spec": "workspace", "scope": "main"},  # the workspace does not have it: as written
        "dep:cargo:regex": {"spec": "1.10", "scope": "main"},
        "dep:cargo:memmap2": {"spec": "0.9", "scope": "main", "workspace": True},  # the crate the workspace's key names
    }
    assert "dep:cargo:memmap" not in result.nodes
    assert declared(result, "java/pom.xml") == {
        "dep:maven:org.junit.jupiter:junit-jupiter": ("5.10.2", "managed", 4),
        "dep:maven:com.fasterxml.jackson.core:jackson-core": ("2.17.0", "compile", 7),
    }
    attrs = {edge["dst"]: edge["attrs"] for edge in result.edges_from("file:java/modules/app/pom.xml", "declares")}
    assert attrs == {
        "dep:maven:org.junit.jupiter:junit-jupiter": {"spec": "5.10.2", "scope": "test", "managed": True},
        "dep:maven:com.acme:core": {"spec": "2.4.0", "scope": "compile"},
        "dep:maven:org.slf4j:slf4j-api": {"spec": "${slf4j.version}", "scope": "compile"},  # defined by no pom here
        "dep:maven:com.google.guava:guava": {"spec": "", "scope": "compile"},  # managed by no parent here
    }


def test_a_home_assistant_integrations_manifest_declares_its_requirements(tmp_path):
    # Home Assistant's shape (and every custom integration's): components/<domain>/manifest.json
    root = write_tree(tmp_path / "r", {
        "custom_components/hue/manifest.json": (
            '{\n  "domain": "hue",\n  "name": "Philips Hue",\n  "requirements": [\n'
            '    "aiohue==4.7.1",\n    "PyYAML>=6"\n  ],\n  "version": "1.0.0"\n}\n'
        ),
        "custom_components/hue/__init__.py": "import aiohue\nimport yaml\nimport bleak\n",
        "web/manifest.json": '{"name": "App", "icons": [], "requirements": ["not-a-dependency"]}\n',  # a web app's
        "extension/manifest.json": '{"manifest_version": 3, "name": "Extension"}\n',
    })
    result = analyse(root)
    assert declared(result, "custom_components/hue/manifest.json") == {
        "dep:pypi:aiohue": ("==4.7.1", "main", 5), "dep:pypi:pyyaml": (">=6", "main", 6),
    }
    assert declared(result, "web/manifest.json") == {} and declared(result, "extension/manifest.json") == {}
    assert result.targets("mod:py:custom_components.hue", "imports") == ["dep:pypi:aiohue", "dep:pypi:bleak", "dep:pypi:pyyaml"]
    undeclared = {node_id for node_id, node in result.of_kind("dependency").items() if not node["attrs"]["declared"]}
    assert undeclared == {"dep:pypi:bleak"}


def test_a_scripts_inline_metadata_declares_what_it_runs_with(tmp_path):
    # PEP 723, as marimo's notebooks and uv's scripts write it
    root = write_tree(tmp_path / "r", {
        "notebooks/redshift.py": (
            "# /// script\n# requires-python = \">=3.12\"\n# dependencies = [\n#     \"marimo\",\n"
            "#     \"polars[pyarrow]==1.30.0\",\n#     \"redshift-connector[full]==2.1.7\",\n# ]\n# ///\n\n"
            "import marimo\nimport polars\nimport redshift_connector\nimport numpy\n"
        ),
        "tools/broken.py": "# /// script\n# dependencies = [\n# ///\nimport os\n",
        "tools/plain.py": "# /// not a script block\nimport yaml\n",
    })
    result = analyse(root)
    assert declared(result, "notebooks/redshift.py") == {
        "dep:pypi:marimo": ("", "script", 4), "dep:pypi:polars": ("==1.30.0", "script", 5),
        "dep:pypi:redshift-connector": ("==2.1.7", "script", 6),
    }
    undeclared = {node_id for node_id, node in result.of_kind("dependency").items() if not node["attrs"]["declared"]}
    assert undeclared == {"dep:pypi:numpy", "dep:pypi:pyyaml"}
    diagnostics = {node["evidence"][0]["path"]: node["attrs"] for node in result.of_kind("diagnostic").values()}
    assert list(diagnostics) == ["tools/broken.py"]
    assert diagnostics["tools/broken.py"]["message"].startswith("the inline script metadata is not TOML")
    assert result.targets("mod:py:tools.broken", "imports") == ["std:py:os"]  # its other facts are kept

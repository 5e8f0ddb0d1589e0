"""
Each manifest and lockfile row is evidenced by the line of its own entry, never by another mention of the name.

The fixtures have the shapes that misled a search by name alone: a lockfile lists a package among the
dependencies of the packages before it (Cargo.lock, packages.lock.json, package-lock v1), a lockfile holds two
versions of one package, a manifest names one package in two tables, and ``cargo publish`` writes each dependency
as a table of its own (``[dependencies.serde]``).
"""

import pytest

from analysis_jobs.pipeline.extractors import ecosystems, manifests
from analysis_jobs.pipeline.extractors.positions import Lines
from tests.pipeline_support import analyse, write_tree


def rows(extract, text: str) -> list[tuple]:
    facts = extract(text.encode())
    return [tuple(row) for row in facts["declared"] + facts["locked"]]


def test_a_cargo_lock_package_is_at_its_own_table_not_where_another_depends_on_it():
    lock = (
        "version = 3\n"
        "\n"
        "[[package]]\n"
        'name = "ahash"\n'
        'version = "0.8.3"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
        "dependencies = [\n"
        ' "cfg-if",\n'  # line 8: a mention of cfg-if, before its own table
        ' "windows-sys 0.48.0",\n'
        "]\n"
        "\n"
        "[[package]]\n"
        'name = "app"\n'  # the workspace's own crate: no source, not locked
        'version = "0.1.0"\n'
        "\n"
        "[[package]]\n"
        'name = "cfg-if"\n'  # line 17
        'version = "1.0.0"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
        "\n"
        "[[package]]\n"
        'name = "windows-sys"\n'  # line 22
        'version = "0.48.0"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
        "\n"
        "[[package]]\n"
        'name = "windows-sys"\n'  # line 27: a second version of one crate
        'version = "0.52.0"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
    )
    assert rows(ecosystems.extract_cargo_lock, lock) == [
        ("cargo", "ahash", "0.8.3", 4, None),
        ("cargo", "cfg-if", "1.0.0", 17, None),
        ("cargo", "windows-sys", "0.48.0", 22, None),
        ("cargo", "windows-sys", "0.52.0", 27, None),
    ]


def test_a_cargo_dependency_written_as_a_table_or_a_dotted_key_is_at_that_line():
    manifest = (
        "[package]\n"
        'name = "smallvec"\n'
        'description = "serde and libc support"\n'  # names that are not keys
        "\n"
        "[dependencies.serde]\n"  # line 5: the form cargo publish writes
        'version = "1"\n'
        "optional = true\n"
        "\n"
        "[dependencies]\n"
        "anyhow.workspace = true\n"  # line 10: a dotted key
        '"quoted-name" = "2"\n'  # line 11
        "\n"
        "[target.'cfg(unix)'.dependencies.libc]\n"  # line 13
        'version = "0.2"\n'
        "\n"
        '[target."cfg(windows)".dependencies]\n'
        'windows-sys = { version = "0.52", package = "windows-sys" }\n'  # line 17
        "\n"
        "[dev-dependencies]\n"
        'serde = { version = "1", features = ["derive"] }\n'  # line 20: serde again, in another table
    )
    assert sorted(rows(ecosystems.extract_cargo_toml, manifest)) == [
        ("cargo", "anyhow", "workspace", "main", 10),
        ("cargo", "libc", "0.2", "main:cfg(unix)", 13),
        ("cargo", "quoted-name", "2", "main", 11),
        ("cargo", "serde", "1", "dev", 20),
        ("cargo", "serde", "1", "main", 5),
        ("cargo", "windows-sys", "0.52", "main:cfg(windows)", 17),
    ]


def test_an_npm_package_in_two_tables_is_at_each_tables_line():
    package = (
        "{\n"
        '  "name": "ui",\n'
        '  "description": "react components",\n'
        '  "peerDependencies": {\n'
        '    "react": "^18"\n'  # line 5
        "  },\n"
        '  "devDependencies": {\n'
        '    "react": "18.3.1",\n'  # line 8
        '    "typescript": "5.6.3"\n'
        "  }\n"
        "}\n"
    )
    assert sorted(rows(manifests.extract_package_json, package)) == [
        ("npm", "react", "18.3.1", "dev", 8),
        ("npm", "react", "^18", "peer", 5),
        ("npm", "typescript", "5.6.3", "dev", 9),
    ]


def test_a_version_1_package_lock_nested_package_is_at_its_own_path():
    lock = (
        "{\n"
        '  "lockfileVersion": 1,\n'
        '  "dependencies": {\n'
        '    "a": {\n'
        '      "version": "1.0.0",\n'
        '      "requires": {"b": "^1.0.0"},\n'
        '      "dependencies": {\n'
        '        "b": {\n'  # line 8: a's own copy of b
        '          "version": "1.0.0"\n'
        "        }\n"
        "      }\n"
        "    },\n"
        '    "b": {\n'  # line 13: the top-level b
        '      "version": "2.0.0"\n'
        "    }\n"
        "  }\n"
        "}\n"
    )
    assert rows(manifests.extract_package_lock, lock) == [
        ("npm", "a", "1.0.0", 4, None),
        ("npm", "b", "1.0.0", 8, None),
        ("npm", "b", "2.0.0", 13, None),
    ]


def test_a_nuget_lock_package_is_at_its_entry_not_where_another_depends_on_it():
    lock = (
        "{\n"
        '  "version": 1,\n'
        '  "dependencies": {\n'
        '    "net8.0": {\n'
        '      "Azure.Core": {\n'
        '        "type": "Direct",\n'
        '        "resolved": "1.38.0",\n'
        '        "dependencies": {\n'
        '          "Microsoft.Bcl.AsyncInterfaces": "1.1.1"\n'  # line 9: a mention
        "        }\n"
        "      },\n"
        '      "Microsoft.Bcl.AsyncInterfaces": {\n'  # line 12
        '        "type": "Transitive",\n'
        '        "resolved": "1.1.1"\n'
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    assert rows(ecosystems.extract_nuget_lock, lock) == [
        ("nuget", "azure.core", "1.38.0", 5, True),
        ("nuget", "microsoft.bcl.asyncinterfaces", "1.1.1", 12, False),
    ]


def test_python_manifests_and_lockfiles_give_each_entry_its_own_line():
    pyproject = (
        "[project]\n"
        'name = "app"\n'
        'description = "uses requests and httpx"\n'
        'dependencies = ["httpx>=0.23"]\n'  # line 4
        "\n"
        "[project.optional-dependencies]\n"
        'standard = ["httpx>=0.23", "uvicorn"]\n'  # line 7: the same string in another list
        "\n"
        "[tool.poetry.dependencies]\n"
        'requests = "^2"\n'  # line 10; "requests" is on line 3 first
    )
    assert sorted(rows(manifests.extract_pyproject, pyproject)) == [
        ("pypi", "httpx", ">=0.23", "main", 4),
        ("pypi", "httpx", ">=0.23", "optional:standard", 7),
        ("pypi", "requests", "^2", "main", 10),
        ("pypi", "uvicorn", "", "optional:standard", 7),
    ]
    pipfile_lock = (
        "{\n"
        '  "default": {\n'
        '    "idna": {"version": "==3.7"}\n'
        "  },\n"
        '  "develop": {\n'
        '    "idna": {"version": "==3.6"}\n'  # line 6
        "  }\n"
        "}\n"
    )
    assert rows(manifests.extract_pipfile_lock, pipfile_lock) == [
        ("pypi", "idna", "3.7", 3, None), ("pypi", "idna", "3.6", 6, None),
    ]
    uv_lock = (
        "version = 1\n"
        "\n"
        "[[package]]\n"
        'name = "app"\n'
        'version = "0.1.0"\n'
        'source = { editable = "." }\n'
        "dependencies = [\n"
        '    { name = "numpy" },\n'
        "]\n"
        "\n"
        "[[package]]\n"
        'name = "numpy"\n'  # line 12
        'version = "2.0.2"\n'
        "\n"
        "[[package]]\n"
        'name = "numpy"\n'  # line 16: another version, for another Python
        'version = "2.2.1"\n'
    )
    assert rows(manifests.extract_uv_lock, uv_lock) == [
        ("pypi", "numpy", "2.0.2", 12, True), ("pypi", "numpy", "2.2.1", 16, True),
    ]


def test_a_maven_artifact_managed_and_used_is_at_each_entrys_line():
    pom = (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <dependencyManagement>\n"
        "    <dependencies>\n"
        "      <dependency>\n"
        "        <groupId>com.fasterxml.jackson.core</groupId>\n"
        "        <artifactId>jackson-databind</artifactId>\n"  # line 6
        "        <version>2.17.1</version>\n"
        "      </dependency>\n"
        "    </dependencies>\n"
        "  </dependencyManagement>\n"
        "  <dependencies>\n"
        "    <dependency>\n"
        "      <groupId>com.fasterxml.jackson.core</groupId>\n"
        "      <artifactId>jackson-databind</artifactId>\n"  # line 14
        "    </dependency>\n"
        "  </dependencies>\n"
        "</project>\n"
    )
    assert rows(ecosystems.extract_pom, pom) == [
        ("maven", "com.fasterxml.jackson.core:jackson-databind", "2.17.1", "managed", 6),
        ("maven", "com.fasterxml.jackson.core:jackson-databind", "", "compile", 14),
    ]
    csproj = (
        '<Project Sdk="Microsoft.NET.Sdk">\n'
        "  <!-- Serilog, pinned for \"Serilog\" sinks -->\n"
        "  <ItemGroup>\n"
        '    <PackageReference Include="Serilog" Version="3.1.1" />\n'  # line 4
        "  </ItemGroup>\n"
        "</Project>\n"
    )
    assert rows(ecosystems.extract_csproj, csproj) == [("nuget", "serilog", "3.1.1", "main", 4)]


@pytest.mark.parametrize(("text", "path", "line"), [
    ('{"a": {"b": [1, {"c": "x:{y}"}], "d": "\\"e\\": ["}, "f": 2}', ("a", "d"), 1),
    ('{\n "a": [\n  {"k": 1},\n  {"k": 2, "m": "]"}\n ],\n "k": 3\n}\n', ("a", "m"), 4),
    ('{\n "a": [\n  {"k": 1},\n  {"k": 2, "m": "]"}\n ],\n "k": 3\n}\n', ("k",), 6),
    ('{\n "\\u0061b": 1\n}\n', ("ab",), 2),
])
def test_json_keys_are_found_by_their_path_past_strings_that_look_like_brackets(text, path, line):
    assert Lines(text).json_key(*path, default=0) == line


def test_toml_keys_inside_a_multi_line_string_are_not_keys():
    text = '[package]\ndescription = """\nserde = "not a key"\n"""\n\n[dependencies]\nserde = "1"\n'
    assert Lines(text).toml_key("dependencies", "serde") == 7
    assert Lines(text).toml_key("package", "serde", default=0) == 0


def test_the_lines_reach_the_sealed_graph(tmp_path):
    root = write_tree(tmp_path / "r", {
        "Cargo.toml": '[package]\nname = "app"\nversion = "0.1.0"\n\n[dependencies.serde]\nversion = "1"\n',
        "Cargo.lock": (
            '[[package]]\nname = "app"\nversion = "0.1.0"\ndependencies = [\n "serde",\n]\n\n'
            '[[package]]\nname = "serde"\nversion = "1.0.210"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\n'
        ),
    })
    result = analyse(root)
    [declares] = result.edges_from("file:Cargo.toml", "declares")
    [locks] = result.edges_from("file:Cargo.lock", "locks")
    assert (declares["dst"], declares["evidence"][0]["lines"]) == ("dep:cargo:serde", [5, 5])
    assert (locks["dst"], locks["evidence"][0]["lines"]) == ("dep:cargo:serde", [9, 9])

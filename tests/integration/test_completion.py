"""Completion: `powerctl __complete` (cobra's protocol) and the bash, zsh and fish scripts that call it,
run in the real shells; names from the cluster come from a fake API server."""
import os
import shlex
import shutil
import subprocess
import unittest

from support import BINARY, SOURCE_DIR, FakeKubeApi, TempDirTest, clean_env, run

COMMITTED = {"bash": "powerctl.bash", "zsh": "_powerctl", "fish": "powerctl.fish"}
# cobra's ShellCompDirective bits
NO_SPACE, NO_FILE_COMP, FILTER_DIRS = 2, 4, 16


def shell_env(**extra):
    """The environment with the built powerctl first on PATH, as the scripts call `powerctl`."""
    env = clean_env(**extra)
    env["PATH"] = os.path.dirname(os.path.abspath(BINARY)) + os.pathsep + env.get("PATH", "")
    return env


def complete(*words, env=None, descriptions=False):
    """`powerctl __complete WORDS...`: (candidates, directive)."""
    r = run("__complete" if descriptions else "__completeNoDesc", *words, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert lines and lines[-1].startswith(":"), r.stdout
    return lines[:-1], int(lines[-1][1:])


def bash_complete(*words, env=None):
    """Completes the last word of `powerctl WORDS...` in bash with the generated script. COMP_WORDS
    is split as bash splits it (COMP_WORDBREAKS: "=" is a word of its own)."""
    line = "powerctl " + " ".join(shlex.quote(w) if w else "" for w in words)
    comp_words = ["powerctl"]
    for w in words:
        parts = w.split("=")
        for i, part in enumerate(parts):
            if i:
                comp_words.append("=")
            if part or i == len(parts) - 1:
                comp_words.append(part)
    script = (
        f'source <("{BINARY}" completion bash)\n'
        f"COMP_LINE={shlex.quote(line)}\n"
        "COMP_POINT=${#COMP_LINE}\n"
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in comp_words)})\n"
        f"COMP_CWORD={len(comp_words) - 1}\n"
        "_powerctl\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                       env=env or shell_env())
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [l for l in r.stdout.splitlines() if l]


def zsh_complete(*words, env=None):
    """Runs the zsh script's _powerctl in zsh for `powerctl WORDS...`, with the completion
    system's _describe and _files replaced by functions that print what they were given."""
    script = (
        "_describe() { local name=$4; print -rl -- ${(P)name}; }\n"
        "_files() { print -r -- FILES $*; }\n"
        "compdef() { :; }\n"
        f'source <("{BINARY}" completion zsh)\n'
        f"words=(powerctl {' '.join(shlex.quote(w) if w else repr('') for w in words)})\n"
        f"CURRENT={len(words) + 1}\n"
        "_powerctl\n"
    )
    r = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, timeout=30,
                       env=env or shell_env())
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [l for l in r.stdout.splitlines() if l]


def fish_complete(line, env=None):
    """fish's own completion (`complete -C`) of `line` with the generated script loaded."""
    path = os.path.join(SOURCE_DIR, "completions", "powerctl.fish")
    r = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C {shlex.quote(line)}"],
                       capture_output=True, text=True, timeout=30, env=env or shell_env())
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [l.split("\t")[0] for l in r.stdout.splitlines() if l]


class FakeApiServer(FakeKubeApi):
    """Just enough of an API server for completion: nodes, namespaces, and pods and Services per
    namespace. Records the paths asked for."""

    LISTS = {
        "/api/v1/nodes": ("NodeList", ["worker-1", "worker-2", "gpu-1"]),
        "/api/v1/namespaces": ("NamespaceList", ["default", "shop", "kube-system"]),
        "/api/v1/namespaces/shop/pods": ("PodList", ["web-1", "web-2", "db-0"]),
        "/api/v1/namespaces/default/pods": ("PodList", ["hello"]),
        "/api/v1/namespaces/shop/services": ("ServiceList", ["web", "db"]),
    }

    def __init__(self):
        def answer(path, _query):
            if path not in self.LISTS:
                return None
            kind, names = self.LISTS[path]
            return 200, {"kind": kind, "apiVersion": "v1", "metadata": {},
                         "items": [{"metadata": {"name": n}} for n in names]}
        super().__init__(answer)


class CompletionTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.api = FakeApiServer()
        self.addCleanup(self.api.stop)
        self.kubeconfig = self.write("kubeconfig", f"""apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {{server: "http://127.0.0.1:{self.api.port}"}}
- name: gone
  cluster: {{server: "http://127.0.0.1:1"}}
users:
- name: me
  user: {{token: secret}}
contexts:
- name: fake-ctx
  context: {{cluster: fake, user: me, namespace: shop}}
- name: other-ctx
  context: {{cluster: gone, user: me}}
current-context: fake-ctx
""")
        self.env = shell_env(KUBECONFIG=self.kubeconfig)

    # --- the protocol -----------------------------------------------------------------------
    def test_committed_scripts_match_the_binary(self):
        for shell, name in COMMITTED.items():
            with self.subTest(shell=shell):
                r = run("completion", shell)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(os.path.join(SOURCE_DIR, "completions", name)) as f:
                    self.assertEqual(f.read(), r.stdout,
                                     f"completions/{name} is stale: run build/powerctl completion {shell} > "
                                     f"completions/{name}")

    def test_scripts_ask_the_binary(self):
        for shell in COMMITTED:
            with self.subTest(shell=shell):
                self.assertIn("__complete", run("completion", shell).stdout)

    def test_subcommands_with_descriptions_and_directive(self):
        candidates, directive = complete("ge", descriptions=True)
        self.assertEqual(candidates, ["generate\tRender the manifests of a power-aware scheduling setup"])
        self.assertEqual(directive, NO_FILE_COMP)
        self.assertEqual(complete("lb", "")[0], ["weights"])
        self.assertNotIn("docs", complete("")[0])  # hidden commands are not offered

    def test_flags_of_the_command_and_the_global_flags(self):
        candidates, directive = complete("generate", "--")
        for flag in ("--kube-version", "--output-dir", "--kubeconfig", "--output", "--color"):
            self.assertIn(flag, candidates)
        self.assertNotIn("--dry-run", candidates)
        self.assertEqual(directive, NO_FILE_COMP)
        self.assertIn("-o", complete("generate", "-")[0])

    def test_enum_flag_values(self):
        for command in ("generate", "apply", "init"):
            self.assertEqual(complete(command, "--kube-version", "1.3")[0],
                             ["1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"], command)
        self.assertEqual(complete("apply", "--dry-run", "")[0], ["none", "client", "server"])
        self.assertEqual(complete("predict", "--source", "e")[0], ["extender"])
        self.assertEqual(complete("explain", "pod", "--source", "")[0], ["auto", "local", "extender"])
        self.assertEqual(complete("lb-agent", "--mode", "")[0], ["nftables", "ipvs"])
        self.assertEqual(complete("--color", "")[0], ["auto", "always", "never"])
        self.assertEqual(complete("--color=ne")[0], ["--color=never"])
        self.assertEqual(complete("generate", "")[0][:2], ["all", "namespace"])
        self.assertEqual(complete("completion", "f")[0], ["fish"])

    def test_output_formats_are_the_commands_own(self):
        self.assertEqual(complete("generate", "-o", "")[0], ["yaml", "json", "jsonpath="])
        self.assertEqual(complete("lb", "weights", "-o", "")[0],
                         ["table", "wide", "json", "yaml", "jsonpath="])
        self.assertEqual(complete("delete", "-o", "")[0], ["table", "name"])
        candidates, directive = complete("version", "-o", "jsonp")
        self.assertEqual(candidates, ["jsonpath="])
        self.assertEqual(directive, NO_FILE_COMP | NO_SPACE)

    def test_file_and_directory_flags_leave_it_to_the_shell(self):
        self.assertEqual(complete("-c", ""), ([], 0))
        self.assertEqual(complete("generate", "--output-dir", ""), ([], FILTER_DIRS))
        self.assertEqual(complete("generate", "--extender-url", ""), ([], NO_FILE_COMP))

    def test_value_taking_flag_before_the_command(self):
        self.assertEqual(complete("-n", "power", "gen")[0], ["generate"])

    # --- names from the cluster -------------------------------------------------------------
    def test_node_names_from_the_cluster(self):
        self.assertEqual(complete("predict", "w", env=self.env)[0], ["worker-1", "worker-2"])
        self.assertEqual(complete("label", "nodes", "", env=self.env)[0],
                         ["worker-1", "worker-2", "gpu-1"])
        self.assertIn("/api/v1/nodes", self.api.paths)

    def test_pod_names_in_the_contexts_namespace_or_n(self):
        self.assertEqual(complete("explain", "pod", "web", env=self.env)[0], ["web-1", "web-2"])
        self.assertEqual(complete("why", "pod", "", env=self.env)[0], ["web-1", "web-2", "db-0"])
        self.assertEqual(complete("why", "pod", "-n", "default", "", env=self.env)[0], ["hello"])

    def test_namespaces_contexts_and_services(self):
        self.assertEqual(complete("-n", "s", env=self.env)[0], ["shop"])
        self.assertEqual(complete("--context", "", env=self.env)[0], ["fake-ctx", "other-ctx"])
        self.assertEqual(complete("lb", "weights", "", env=self.env)[0], ["web", "db"])

    def test_an_unreachable_cluster_gives_no_candidates_and_no_message(self):
        candidates, directive = complete("--context", "other-ctx", "explain", "pod", "", env=self.env)
        self.assertEqual(candidates, [])
        self.assertEqual(directive, NO_FILE_COMP)
        self.assertEqual(complete("predict", "", env=shell_env(KUBECONFIG=self.path("none")))[0], [])

    # --- the shells -------------------------------------------------------------------------
    def test_bash(self):
        self.assertEqual(bash_complete("gen"), ["generate"])
        self.assertEqual(bash_complete("generate", "sch"), ["scheduler"])
        self.assertEqual(bash_complete("generate", "-o", "ya"), ["yaml"])
        self.assertEqual(bash_complete("--color", "ne"), ["never"])
        self.assertEqual(bash_complete("-n", "power", "gen"), ["generate"])
        self.assertEqual(bash_complete("why", "pod", "web", env=self.env), ["web-1", "web-2"])
        # bash splits "--output=" into its own words; the reply replaces only the last one
        self.assertEqual(bash_complete("version", "--output=ya"), ["yaml"])

    def test_bash_syntax_of_committed_script(self):
        path = os.path.join(SOURCE_DIR, "completions", "powerctl.bash")
        r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    @unittest.skipUnless(shutil.which("zsh"), "zsh is not installed (Debian package zsh)")
    def test_zsh(self):
        self.assertEqual(zsh_complete("gen"), ["generate:Render the manifests of a power-aware scheduling setup"])
        self.assertEqual(zsh_complete("generate", "-o", "ya"), ["yaml"])
        self.assertEqual(zsh_complete("explain", "pod", "db", env=self.env), ["db-0"])
        self.assertEqual(zsh_complete("generate", "--output-dir", ""), ["FILES -/"])

    @unittest.skipUnless(shutil.which("fish"), "fish is not installed (Debian package fish)")
    def test_fish(self):
        self.assertIn("generate", fish_complete("powerctl gen"))
        self.assertEqual(fish_complete("powerctl generate -o ya"), ["yaml"])
        self.assertEqual(sorted(fish_complete("powerctl lb weights ", env=self.env)), ["db", "web"])

    def test_unknown_shell_is_usage_error(self):
        self.assertEqual(run("completion", "tcsh").returncode, 2)


if __name__ == "__main__":
    unittest.main()

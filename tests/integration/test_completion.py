"""Completion scripts: generated from the command tree, committed in completions/, and working in bash."""
import os
import shlex
import shutil
import subprocess
import unittest

from support import BINARY, SOURCE_DIR, TempDirTest, run

COMMITTED = {"bash": "powerctl.bash", "zsh": "_powerctl", "fish": "powerctl.fish"}


def bash_complete(*words):
    """Completes the last word of `powerctl WORDS...` with the generated bash script."""
    quoted = " ".join(shlex.quote(w) for w in words)
    script = (
        f'source <("{BINARY}" completion bash)\n'
        f"COMP_WORDS=(powerctl {quoted})\n"
        f"COMP_CWORD={len(words)}\n"
        "_powerctl\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [l for l in r.stdout.splitlines() if l]


class CompletionTest(TempDirTest):
    def test_committed_scripts_match_the_binary(self):
        for shell, name in COMMITTED.items():
            with self.subTest(shell=shell):
                r = run("completion", shell)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(os.path.join(SOURCE_DIR, "completions", name)) as f:
                    self.assertEqual(f.read(), r.stdout,
                                     f"completions/{name} is stale: run build/powerctl completion {shell} > "
                                     f"completions/{name}")

    def test_bash_completes_gen_to_generate(self):
        self.assertEqual(bash_complete("gen"), ["generate"])

    def test_bash_completes_components_and_flags(self):
        self.assertEqual(bash_complete("generate", "sch"), ["scheduler"])
        self.assertIn("--kube-version", bash_complete("generate", "--kube"))
        self.assertIn("1.20", bash_complete("generate", "--kube-version", "1.2"))
        self.assertEqual(bash_complete("generate", "-o", "ya"), ["yaml"])
        self.assertEqual(bash_complete("--color", "ne"), ["never"])
        self.assertEqual(bash_complete("completion", "f"), ["fish"])
        # a value-taking global flag before the command does not hide the command
        self.assertEqual(bash_complete("-n", "power", "gen"), ["generate"])

    def test_unknown_shell_is_usage_error(self):
        self.assertEqual(run("completion", "tcsh").returncode, 2)

    def test_bash_syntax_of_committed_script(self):
        path = os.path.join(SOURCE_DIR, "completions", "powerctl.bash")
        r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    @unittest.skipUnless(shutil.which("fish"), "fish is not installed")
    def test_fish_loads_script(self):
        r = subprocess.run(["fish", "-c", f"source {SOURCE_DIR}/completions/powerctl.fish; complete -C 'powerctl gen'"],
                           capture_output=True, text=True)
        self.assertIn("generate", r.stdout)


if __name__ == "__main__":
    unittest.main()

"""Global conventions: help, version, exit codes, usage errors, colour."""
import json
import re
import unittest

import yaml

from support import TempDirTest, clean_env, run


class CliBasicsTest(TempDirTest):
    def test_help_lists_commands_and_exits_0(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        for command in ("init", "generate", "completion", "version"):
            self.assertIn(command, r.stdout)
        self.assertIn("Exit codes", r.stdout)

    def test_no_command_prints_the_help(self):
        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, run("--help").stdout)
        self.assertEqual(r.stderr, "")

    def test_help_command_prints_any_commands_help(self):
        self.assertEqual(run("help").stdout, run("--help").stdout)
        r = run("help", "lb", "weights")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, run("lb", "weights", "--help").stdout)
        self.assertIn("Usage: powerctl lb weights", r.stdout)

    def test_help_for_an_unknown_command_suggests_one(self):
        r = run("help", "lb", "wieghts")
        self.assertEqual(r.returncode, 2)
        self.assertIn('unknown command "wieghts" for "powerctl lb" (did you mean "weights"?)',
                      r.stderr)
        self.assertEqual(r.stdout, "")

    def test_unknown_command_is_a_usage_error(self):
        r = run("frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn("frobnicate", r.stderr)

    def test_unknown_flag_names_the_command_and_the_closest_flag(self):
        r = run("generate", "--ouput-dir", "out")
        self.assertEqual(r.returncode, 2)
        self.assertIn('unknown flag "--ouput-dir" for "powerctl generate" (did you mean '
                      '"--output-dir"?)', r.stderr)
        self.assertIn("Run 'powerctl generate --help' for usage.", r.stderr)
        # Global flags fall through to every command, so they are suggested there too.
        r = run("version", "--kubeconfg", "x")
        self.assertIn('(did you mean "--kubeconfig"?)', r.stderr)
        self.assertNotIn("did you mean", run("version", "--bogus").stderr)

    def test_unknown_flag_is_a_usage_error(self):
        r = run("version", "--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--bogus", r.stderr)

    def test_version_text_json_yaml(self):
        r = run("version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^powerctl \d+\.\d+\.\d+ \(commit \S+, built \d{4}-\d\d-\d\dT")
        doc = json.loads(run("version", "-o", "json").stdout)
        self.assertEqual(set(doc), {"version", "gitCommit", "buildDate", "allocator"})
        # The default build links jemalloc (cmake/Allocator.cmake); POWERCTL_JEMALLOC=OFF glibc.
        self.assertRegex(doc["allocator"], r"^(jemalloc \d+\.\d+\.\d+|glibc malloc \d+\.\d+)")
        self.assertIn("allocator: " + doc["allocator"], r.stdout)
        self.assertRegex(doc["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(yaml.safe_load(run("version", "-o", "yaml").stdout), doc)
        self.assertEqual(run("version", "--short").stdout.strip(), doc["version"])

    def test_unsupported_output_format_names_the_choices(self):
        r = run("version", "-o", "wide")
        self.assertUsageError(r, "-o wide", "table|json|yaml")

    def test_subcommand_help_shows_global_flags_and_its_own_formats(self):
        r = run("lb", "weights", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Global Flags:", r.stdout)
        for flag in ("--kubeconfig", "--context", "--namespace", "--color", "--set"):
            self.assertIn(flag, r.stdout.split("Global Flags:")[1])
        self.assertRegex(r.stdout, r"-o,--output FORMAT +Output format: "
                                   r"table\|wide\|json\|yaml\|jsonpath=TEMPLATE \(default table\)")
        self.assertEqual(run("help", "lb", "weights").stdout, r.stdout)
        generate = run("help", "generate").stdout
        self.assertIn("Output format: yaml|json|jsonpath=TEMPLATE (default yaml)", generate)
        self.assertIn("Output format: table|name (default table)", run("delete", "--help").stdout)
        # The root's own help lists them once, as its flags.
        self.assertNotIn("Global Flags:", run("--help").stdout)

    def test_unsupported_output_format_suggests_the_closest(self):
        r = run("version", "-o", "jsn")
        self.assertUsageError(r, '-o jsn: this command accepts table|json|yaml|jsonpath=TEMPLATE',
                              '(did you mean "json"?)')
        self.assertIn("Run 'powerctl version --help' for usage.", r.stderr)
        r = run("delete", "-o", "json")
        self.assertUsageError(r, "-o json: this command accepts table|name")

    def test_output_jsonpath(self):
        version = json.loads(run("version", "-o", "json").stdout)["version"]
        r = run("version", "-o", "jsonpath={.version}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, version)
        r = run("generate", "namespace", "rbac", "-o",
                r'jsonpath={range .items[*]}{.kind}/{.metadata.name}{"\n"}{end}')
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "Namespace/powerctl")
        self.assertGreater(len(lines), 2)
        self.assertTrue(all("/" in l for l in lines), lines)

    def test_output_jsonpath_errors_are_usage_errors(self):
        self.assertUsageError(run("version", "-o", "jsonpath={.version"),
                              "-o jsonpath: template position 10: unclosed")
        self.assertUsageError(run("version", "-o", "jsonpath={..version}"), "recursive descent")
        # where -o json is not offered, neither is jsonpath
        self.assertUsageError(run("delete", "-o", "jsonpath={.items}"), "accepts table|name")

    def test_unknown_component_suggests_the_closest(self):
        kubeconfig = self.path("missing-kubeconfig")
        for command in (["generate"], ["apply", "--kubeconfig", kubeconfig],
                        ["delete", "--kubeconfig", kubeconfig]):
            with self.subTest(command=command[0]):
                r = run(*command, "schedular")
                self.assertUsageError(r, 'unknown component "schedular" (did you mean "scheduler"?')
        self.assertNotIn("did you mean", run("generate", "zzzzzzzz").stderr)

    def test_bad_color_value_is_usage_error(self):
        r = run("version", "--color", "sometimes")
        self.assertEqual(r.returncode, 2)

    def test_error_colour_follows_flag_and_no_color(self):
        bad = ["generate", "--kube-version", "1.19"]
        always = run("--color", "always", *bad)
        self.assertIn("\x1b[31merror:", always.stderr)
        never = run("--color", "never", *bad)
        self.assertNotIn("\x1b[", never.stderr)
        # NO_COLOR wins over auto, even if stderr were a terminal.
        auto = run(*bad, env=clean_env(NO_COLOR="1"))
        self.assertNotIn("\x1b[", auto.stderr)

    def test_verbosity_out_of_range_is_usage_error(self):
        self.assertEqual(run("-v", "11", "version").returncode, 2)
        self.assertEqual(run("-v", "10", "version").returncode, 0)


if __name__ == "__main__":
    unittest.main()

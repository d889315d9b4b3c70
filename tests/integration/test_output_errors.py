"""Output that cannot be written fails the command with exit 1: standard output on a full disk
(/dev/full) or into a pipe nobody reads any more, and the files commands write."""
import fcntl
import os
import resource
import signal
import subprocess
import unittest

from support import BINARY, TempDirTest, clean_env

# Commands that print to standard output, small (one write at exit) and large (many writes).
COMMANDS = [
    ("version",),
    ("docs", "commands"),
    ("completion", "bash"),
    ("generate", "all"),
    ("init", "--defaults", "-"),
    ("simulate", "--seeds", "1", "--load", "25"),
    ("simulate", "--seeds", "1", "--load", "25", "-o", "json"),
]


def run_to(stdout, *args, preexec_fn=None):
    return subprocess.run([BINARY, *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env=clean_env(), timeout=120, preexec_fn=preexec_fn)


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("error:")]


class StandardOutputTest(TempDirTest):
    def test_a_full_disk_fails_with_one_error_line(self):
        for args in COMMANDS:
            with self.subTest(args=args), open("/dev/full", "w") as full:
                r = run_to(full, *args)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(error_lines(r.stderr),
                                 ["error: writing to standard output: No space left on device"])

    def test_a_closed_pipe_fails_quietly(self):
        for args in COMMANDS:
            with self.subTest(args=args):
                read_end, write_end = os.pipe()
                os.close(read_end)  # the reader is gone before the first write, as after `head -1`
                try:
                    r = run_to(write_end, *args)
                finally:
                    os.close(write_end)
                # Exit 1, not death by SIGPIPE (-13) and not success.
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(error_lines(r.stderr), [], r.stderr)

    def test_a_pipe_that_stops_reading_midway_fails(self):
        # `powerctl docs commands | head -c 1`: more than the pipe holds, the reader leaves.
        read_end, write_end = os.pipe()
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
        p = subprocess.Popen([BINARY, "docs", "commands"], stdout=write_end,
                             stderr=subprocess.PIPE, env=clean_env())
        os.close(write_end)
        self.assertEqual(len(os.read(read_end, 1)), 1)
        os.close(read_end)
        _, stderr = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1, stderr)
        self.assertEqual(stderr, b"")

    def test_writable_output_still_succeeds(self):
        with open(self.path("out.txt"), "w") as f:
            r = run_to(f, "docs", "commands")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(os.path.getsize(self.path("out.txt")), 10000)


def small_file_limit():
    # Files larger than 4 KiB cannot be written (EFBIG); SIGXFSZ keeps its default action, which
    # would kill the process unless powerctl handles it.
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


class WrittenFilesTest(TempDirTest):
    def test_simulate_report_on_a_full_disk(self):
        r = run_to(subprocess.DEVNULL, "simulate", "--seeds", "1", "--report", "/dev/full")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(error_lines(r.stderr)), 1, r.stderr)
        self.assertIn("/dev/full", r.stderr)

    def test_simulate_report_larger_than_the_file_size_limit(self):
        report = self.path("report.html")
        r = run_to(subprocess.DEVNULL, "simulate", "--seeds", "1", "--report", report,
                   preexec_fn=small_file_limit)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(error_lines(r.stderr)), 1, r.stderr)
        self.assertIn(report, r.stderr)

    def test_generate_output_dir_larger_than_the_file_size_limit(self):
        out = self.path("out")
        r = run_to(subprocess.DEVNULL, "generate", "all", "--output-dir", out,
                   preexec_fn=small_file_limit)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(error_lines(r.stderr)), 1, r.stderr)
        self.assertIn(out, r.stderr)


if __name__ == "__main__":
    unittest.main()

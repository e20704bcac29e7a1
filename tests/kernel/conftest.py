"""The kernel's tests run real kernel processes through jupyter_client.

A kernelspec for the unconfined dev mode (`kennel-launch --unconfined
--python -f {connection_file}`) is written into a temporary JUPYTER_PATH that
this whole session uses, so jupyter_kernel_test and KernelManager find it by
name and nothing is installed on the machine."""
import json
import os

import pytest

from kernelclient import KERNEL_NAME, ConfinedKernel, built, start_kernel, stop_kernel


def write_kernelspec(root):
    """kernels/kennel-dev/kernel.json under root (a JUPYTER_PATH entry)."""
    launcher = built("kernel-launcher/kennel-launch")
    spec_dir = os.path.join(root, "kernels", KERNEL_NAME)
    os.makedirs(spec_dir, exist_ok=True)
    spec = {
        "argv": [str(launcher), "--unconfined", "--python", "-f", "{connection_file}"],
        "display_name": "Python 3 (kennel, unconfined dev mode)",
        "language": "python",
        "interrupt_mode": "message",
        "env": {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=0")},
    }
    with open(os.path.join(spec_dir, "kernel.json"), "w") as f:
        json.dump(spec, f)
    return spec_dir


@pytest.fixture(scope="session", autouse=True)
def kennel_kernelspec(tmp_path_factory):
    """The dev-mode kernelspec in a temporary JUPYTER_PATH. Session-scoped and
    autouse, so it exists before jupyter_kernel_test's setUpClass starts its
    kernel (class-scoped); a missing kennel-launch fails the tests here."""
    root = tmp_path_factory.mktemp("jupyter")
    saved = {name: os.environ.get(name) for name in ("JUPYTER_PATH", "JUPYTER_RUNTIME_DIR")}
    spec_dir = write_kernelspec(str(root))
    os.environ["JUPYTER_PATH"] = str(root)
    os.environ["JUPYTER_RUNTIME_DIR"] = str(root / "runtime")
    yield spec_dir
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def kernel():
    """One kernel for a test module (cheap to share: tests use their own names)."""
    k = start_kernel()
    yield k
    stop_kernel(k)


@pytest.fixture
def fresh_kernel():
    """A kernel of its own, for tests that change global state."""
    k = start_kernel()
    yield k
    stop_kernel(k)


@pytest.fixture
def launch(tmp_path):
    """Starts confined kernels (`kennel-launch --spec-fd`, the gateway's
    path) with the given kernel settings; all stopped at the end."""
    started = []

    def start(settings):
        kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), settings,
                                str(tmp_path / str(len(started))))
        started.append(kernel)
        return kernel.start()

    yield start
    for kernel in started:
        kernel.stop()

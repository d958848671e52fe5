"""Reading a kubeconfig into the official client's ``Configuration``, the way kubectl picks one.

The file is ``--kubeconfig`` if given, else ``$KUBECONFIG`` (a ``:``-separated list is merged, as
kubectl does), else ``~/.kube/config``; the context is ``--context`` if given, else the file's
``current-context``.  Nothing here logs or returns credentials: callers get the server URL, the
context name and the path for messages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException


class KubeconfigError(Exception):
    """The kubeconfig cannot be used (missing file, unknown context, no server); the message says why."""


@dataclass(frozen=True)
class Kubeconfig:
    configuration: client.Configuration
    path: str
    context: str

    @property
    def server(self) -> str:
        """The server's URL for messages (no credentials in it: :func:`display_server`)."""
        return display_server(str(self.configuration.host))


def display_server(url: str) -> str:
    """``url`` without what must not be printed: a ``user:password@`` part, a query or a fragment."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return "(a server URL that cannot be parsed)"


def default_kubeconfig_path() -> str:
    """``$KUBECONFIG`` (possibly several files joined with ``:``) or ``~/.kube/config``."""
    return os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")


def load_kubeconfig(path: str | os.PathLike[str] | None = None, context: str | None = None) -> Kubeconfig:
    """The client configuration for ``context`` in the kubeconfig at ``path`` (default as kubectl)."""
    chosen = str(path) if path is not None else default_kubeconfig_path()
    files = [p for p in chosen.split(os.pathsep) if p]
    if not files:
        raise KubeconfigError("no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG")
    missing = [p for p in files if not Path(os.path.expanduser(p)).is_file()]
    if len(missing) == len(files):
        if len(files) == 1 and Path(os.path.expanduser(files[0])).exists():
            raise KubeconfigError(f"kubeconfig {chosen} is not a file")
        raise KubeconfigError(f"kubeconfig {chosen} does not exist")
    chosen = os.pathsep.join(p for p in files if p not in missing)
    name = context or ""
    try:
        names, current = _contexts(chosen)
        name = context or current
        if not name:
            raise KubeconfigError(f"kubeconfig {chosen} has no current-context; pass --context (one of: "
                                  f"{', '.join(names) or 'none'})")
        if name not in names:
            raise KubeconfigError(f"kubeconfig {chosen} has no context {name!r} (it has: {', '.join(names) or 'none'})")
        configuration = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]  # the kubernetes client has no type hints
            config_file=chosen, context=name, client_configuration=configuration, persist_config=False)
    except ConfigException as err:
        raise KubeconfigError(f"kubeconfig {chosen}: {one_line(str(err))}") from None
    except yaml.YAMLError as err:
        raise KubeconfigError(f"kubeconfig {chosen}: not valid YAML: {yaml_problem(err)}") from None
    except UnicodeDecodeError:
        raise KubeconfigError(f"kubeconfig {chosen}: not UTF-8 text") from None
    except OSError as err:
        raise KubeconfigError(f"kubeconfig {chosen}: cannot read it: {err.strerror or err}") from None
    except ValueError as err:  # e.g. certificate data that is not base64
        raise KubeconfigError(f"kubeconfig {chosen}: cannot load it: {one_line(str(err))}") from None
    except (AttributeError, TypeError, KeyError):  # the client's loader on entries of the wrong shape
        raise KubeconfigError(f"kubeconfig {chosen}: context {name!r} cannot be loaded: its cluster, user or "
                              "context entry is not a mapping of the fields a kubeconfig holds") from None
    if not configuration.host or configuration.host == "http://localhost":
        raise KubeconfigError(f"kubeconfig {chosen}: context {name!r} names no server")
    return Kubeconfig(configuration, chosen, name)


def _contexts(files: str) -> tuple[list[str], str]:
    """Context names of the (merged) kubeconfig files, and the current-context (the first file's that sets one)."""
    names: list[str] = []
    current = ""
    for path in files.split(os.pathsep):
        doc = yaml.safe_load(Path(os.path.expanduser(path)).read_text()) or {}
        if not isinstance(doc, dict):
            raise KubeconfigError(f"kubeconfig {path} is not a kubeconfig (a YAML mapping)")
        for key in ("clusters", "users", "contexts"):
            if not isinstance(doc.get(key) or [], list):
                raise KubeconfigError(f"kubeconfig {path} is not a kubeconfig: {key} is not a list")
        names += [str(c.get("name", "")) for c in doc.get("contexts") or [] if isinstance(c, dict)]
        current = current or str(doc.get("current-context") or "")
    return names, current


def one_line(text: str) -> str:
    """A message on one line: an ``error:`` line must not be split in several."""
    return " ".join(text.split())


def yaml_problem(err: yaml.YAMLError) -> str:
    """PyYAML's multi-line message (the offending line quoted, a ``^`` under it) as one line: the problem and where."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        what = err.problem or err.context or "not valid YAML"
        return one_line(f"{what}{where}")
    return one_line(str(err)) or "not valid YAML"


SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_DIR_ENV = "CVO_SERVICEACCOUNT_DIR"  # where the token and CA are mounted (tests move it)


def in_cluster_available() -> bool:
    """Whether this process runs in a pod: the API server's service is in the environment."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT"))


def load_in_cluster() -> Kubeconfig:
    """The pod's configuration, as client-go's ``rest.InClusterConfig``: ``KUBERNETES_SERVICE_HOST`` and
    ``_PORT``, the service account's ``token`` and ``ca.crt`` (in ``$CVO_SERVICEACCOUNT_DIR``, default
    :data:`SERVICE_ACCOUNT_DIR`).  The token is read again when it is rotated (the client's refresh hook)."""
    from kubernetes.config.incluster_config import InClusterConfigLoader

    directory = os.environ.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR
    if not in_cluster_available():
        raise KubeconfigError("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
    configuration = client.Configuration()
    try:
        loader = InClusterConfigLoader(  # type: ignore[no-untyped-call]  # the kubernetes client has no type hints
            token_filename=os.path.join(directory, "token"), cert_filename=os.path.join(directory, "ca.crt"),
            try_refresh_token=True)
        loader.load_and_set(configuration)  # type: ignore[no-untyped-call]  # the kubernetes client has no type hints
    except ConfigException as err:
        raise KubeconfigError(f"in-cluster configuration ({directory}): {err}") from None
    except OSError as err:
        raise KubeconfigError(f"in-cluster configuration ({directory}): cannot read it: {err.strerror}") from None
    return Kubeconfig(configuration, directory, "in-cluster")

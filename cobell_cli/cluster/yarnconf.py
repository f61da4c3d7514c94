"""Find the ResourceManager web address(es) the way Hadoop clients do, from yarn-site.xml.

Search order: `$YARN_CONF_DIR`, `$HADOOP_CONF_DIR`, `/etc/hadoop/conf`; the first directory
holding a yarn-site.xml wins. Values may use `${other.property}` (or `${env.NAME}`, or a bare
`${NAME}` that no property defines, taken from the environment).

With `yarn.resourcemanager.ha.enabled=true`, every id in `yarn.resourcemanager.ha.rm-ids`
gives one URL, from `yarn.resourcemanager.webapp[.https].address.<id>` or else
`yarn.resourcemanager.hostname.<id>` plus the default port. `yarn.http.policy=HTTPS_ONLY`
selects the https address (default port 8090) instead of http (8088). Hadoop's default host
0.0.0.0 ("all interfaces" on the server) is asked as localhost.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cobell_cli.errors import ConfigError

CONF_DIR_VARS = ("YARN_CONF_DIR", "HADOOP_CONF_DIR")
DEFAULT_CONF_DIR = Path("/etc/hadoop/conf")
_VAR = re.compile(r"\$\{([^}$]+)\}")
_MAX_DEPTH = 20


def find_yarn_site(
    env: Mapping[str, str] | None = None, default_dir: Path = DEFAULT_CONF_DIR
) -> Path | None:
    env = os.environ if env is None else env
    dirs = [Path(env[v]) for v in CONF_DIR_VARS if env.get(v)] + [default_dir]
    for directory in dirs:
        candidate = directory / "yarn-site.xml"
        if candidate.is_file():
            return candidate
    return None


def read_properties(path: Path) -> dict[str, str]:
    """name -> raw value of every <property> in a Hadoop configuration file."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ConfigError(
            f"{path} is not valid XML ({exc})", hint="fix the file or pass --rm-url"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name = (prop.findtext("name") or "").strip()
        if name:
            props[name] = (prop.findtext("value") or "").strip()
    return props


def expand(value: str, props: Mapping[str, str], env: Mapping[str, str]) -> str:
    """Hadoop-style ${var} substitution; unresolvable references are left as written."""

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("env."):
            return env.get(name[4:], match.group(0))
        if name in props:
            return props[name]
        return env.get(name, match.group(0))

    for _ in range(_MAX_DEPTH):
        expanded = _VAR.sub(lookup, value)
        if expanded == value:
            return expanded
        value = expanded
    return value


def rm_web_urls(props: Mapping[str, str], env: Mapping[str, str] | None = None) -> list[str]:
    """The RM web URLs a yarn-site.xml describes, in rm-ids order for HA."""
    env = os.environ if env is None else env

    def get(key: str) -> str | None:
        raw = props.get(key)
        if raw is None or raw.strip() == "":
            return None
        return expand(raw, props, env).strip()

    https = (get("yarn.http.policy") or "HTTP_ONLY").upper() == "HTTPS_ONLY"
    scheme, port = ("https", 8090) if https else ("http", 8088)
    web = "webapp.https.address" if https else "webapp.address"
    key = f"yarn.resourcemanager.{web}"

    def url(address: str) -> str:
        host, sep, rest = address.partition(":")
        if host in {"0.0.0.0", ""}:
            host = "localhost"
        return f"{scheme}://{host}{sep}{rest}" if sep else f"{scheme}://{host}:{port}"

    if (get("yarn.resourcemanager.ha.enabled") or "false").lower() == "true":
        ids = [i.strip() for i in (get("yarn.resourcemanager.ha.rm-ids") or "").split(",")]
        ids = [i for i in ids if i]
        if not ids:
            raise ConfigError(
                "yarn-site.xml enables RM HA but yarn.resourcemanager.ha.rm-ids is empty",
                hint="fix yarn-site.xml or pass --rm-url",
            )
        urls = []
        for rm_id in ids:
            address = get(f"{key}.{rm_id}")
            if address is None:
                host = get(f"yarn.resourcemanager.hostname.{rm_id}")
                if host is None:
                    raise ConfigError(
                        f"yarn-site.xml names RM {rm_id!r} but sets neither {key}.{rm_id} nor "
                        f"yarn.resourcemanager.hostname.{rm_id}",
                        hint="fix yarn-site.xml or pass --rm-url",
                    )
                address = f"{host}:{port}"
            urls.append(url(address))
        return urls
    address = get(key)
    if address is None:
        address = f"{get('yarn.resourcemanager.hostname') or '0.0.0.0'}:{port}"
    return [url(address)]


def discover_rm_urls(
    env: Mapping[str, str] | None = None, default_dir: Path = DEFAULT_CONF_DIR
) -> tuple[list[str], Path | None]:
    """RM URLs from the first yarn-site.xml found, and which file that was."""
    env = os.environ if env is None else env
    path = find_yarn_site(env, default_dir)
    if path is None:
        return [], None
    return rm_web_urls(read_properties(path), env), path


def site_allocation(env: Mapping[str, str] | None = None) -> Any:
    """The container allocation yarn-site.xml names (cluster/allocation.py), or None."""
    from cobell_cli.cluster.allocation import allocation_of

    path = find_yarn_site(env)
    if path is None:
        return None
    try:
        props = read_properties(path)
    except ConfigError:
        return None
    env = os.environ if env is None else env
    return allocation_of({k: expand(v, props, env) for k, v in props.items()}, "yarn-site.xml")

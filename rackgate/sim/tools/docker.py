"""docker: `docker exec [-i] [-e K=V]... NAME cmd...` runs cmd here, in the container's env."""
import os
import sys

from ..state import this_node


def main() -> None:
    args = sys.argv[1:]
    _, node, _ = this_node()
    if not args or args[0] != "exec":
        print(f"docker: '{args[0] if args else ''}' is not simulated", file=sys.stderr)
        sys.exit(2)
    args = args[1:]
    env = dict(os.environ)
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in ("-e", "--env"):
            k, _, v = args.pop(0).partition("=")
            env[k] = v
    name, cmd = args[0], args[1:]
    containers = node.get("containers", {})
    if containers and name not in containers:
        print(f"Error response from daemon: No such container: {name}", file=sys.stderr)
        sys.exit(1)
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    main()

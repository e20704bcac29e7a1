"""F13's residual (issue 12): /proc/self/mountinfo inside the sandbox showed,
as each bind's root, the host path of the bound directory: the state dir,
the conversation id (<state>/conv/<id>/workspace) and the run dir's name
(<state>/run/<name>). With the quota layer (gateway/gw_quota.c, on by
default) both are tmpfs mounts of the gateway's own, so the root shown is
"/" of that tmpfs.

Read from inside a confined kernel, for a root gateway and one running as
uid 65534 (its mounts live in its own user and mount namespace): no line
names the state dir, the conversation id or the run dir; /workspace and
/run/kennel are mount roots ("/"). The host side is checked first: the
conversation's workspace and run dir exist under the state dir, so the
strings searched for are the ones a leak would show."""

from gwtest import execute, stdout_of

CONVERSATION = "secret-conversation-7f3a"


def test_mountinfo_shows_no_host_path(either_gateway):
    gw = either_gateway
    reply, kc = gw.open_client(CONVERSATION)
    # the host side: where the leak would point
    runs = [p for p in (gw.state / "run").iterdir() if p.is_dir()]
    assert (gw.state / "conv" / CONVERSATION / "workspace").is_dir() and runs, (gw.state, runs)
    _, outputs = execute(kc, "print(open('/proc/self/mountinfo').read(), end='')")
    mountinfo = stdout_of(outputs)
    lines = mountinfo.splitlines()
    assert any(line.split()[4] == "/workspace" for line in lines), mountinfo
    for secret in [str(gw.state), CONVERSATION] + [run.name for run in runs]:
        assert secret not in mountinfo, (secret, mountinfo)
    roots = {line.split()[4]: line.split()[3] for line in lines}
    assert roots["/workspace"] == "/" and roots["/run/kennel"] == "/", roots

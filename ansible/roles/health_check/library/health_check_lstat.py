#!/usr/bin/python
"""What is at each of several paths, without following symbolic links: one round trip for the
whole chain of directories above a work directory (ansible.builtin.stat takes one path per call)."""

DOCUMENTATION = r"""
---
module: health_check_lstat
short_description: lstat several paths at once
description:
  - For each path, whether it exists and, if it does, its owner, mode and type, like
    M(ansible.builtin.stat) with O(ansible.builtin.stat#module:follow=false), in one call.
  - Changes nothing; runs in check mode too.
options:
  paths:
    description: Absolute paths.
    type: list
    elements: str
    required: true
author: the health_check authors
"""

EXAMPLES = r"""
- name: Look at a directory and every directory above it
  health_check_lstat:
    paths: [/, /var, /var/lib]
  register: found
"""

RETURN = r"""
stats:
  description: One entry per path, in order.
  returned: always
  type: list
  elements: dict
  sample:
    - {path: /tmp, exists: true, uid: 0, pw_name: root, mode: "1777", isdir: true, islnk: false}
"""

import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule


def lstat_entry(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"path": path, "exists": False}
    try:
        name = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        name = None
    entry = {
        "path": path,
        "exists": True,
        "uid": st.st_uid,
        "pw_name": name,
        "mode": f"{stat.S_IMODE(st.st_mode):04o}",
        "isdir": stat.S_ISDIR(st.st_mode),
        "islnk": stat.S_ISLNK(st.st_mode),
    }
    if entry["islnk"]:
        entry["lnk_target"] = os.readlink(path)
    return entry


def main():
    module = AnsibleModule(
        argument_spec={"paths": {"type": "list", "elements": "str", "required": True}},
        supports_check_mode=True,
    )
    try:
        stats = [lstat_entry(p) for p in module.params["paths"]]
    except OSError as e:
        module.fail_json(msg=f"cannot look at {e.filename}: {e.strerror}")
    module.exit_json(changed=False, stats=stats)


if __name__ == "__main__":
    main()

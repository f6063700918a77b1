"""A seccomp filter for sandboxed programs: system calls no such program needs fail with EPERM.

Defence in depth behind bubblewrap's namespaces, the uid drop and the rlimits. What it takes
away, and why:

- ``ptrace`` and ``process_vm_readv``/``writev``: a run could stop the pid namespace's init
  (which then can neither reap nor report) and stall the run until its wall time, or read
  and write another process of the run that guards a secret (a Python session's supervisor).
- SysV shared memory and message queues: their pages live in the IPC namespace, outside
  every rlimit, until the run ends (``memory_mb`` bounds address space, not these).
- ``memfd_create``, only where the run has no memory cgroup (``cgroup``): a memfd's pages
  are outside every rlimit. It fails with ``ENOMEM``, which names ``Limit.MEMORY``.
- Kernel attack surface that sandboxed code has no use for: ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``io_uring``, the key ring, and the administrator's calls (modules,
  kexec, mounts, swap, reboot, namespaces, raw I/O ports, file handles).

The program is classic BPF as bubblewrap's ``--seccomp FD`` takes it (an array of
``struct sock_filter``), built here for x86_64 only; on other machines there is no filter
and the other layers stand alone. Calls from another ABI (i386 via ``int 0x80``, x32) are
all refused: their numbers differ and would slip past the list.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM
_RET_ENOMEM = 0x00050000 | errno.ENOMEM
_MEMFD_CREATE = 319
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # struct seccomp_data

DENIED_X86_64 = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "shmdt": 67,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "unshare": 272,
    "setns": 308,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "acct": 163,
    "quotactl": 179,
    "syslog": 103,
    "lookup_dcookie": 212,
    "open_by_handle_at": 304,
    "iopl": 172,
    "ioperm": 173,
    "uselib": 134,
    "fanotify_init": 300,
}


@functools.cache
def program(*, memfd: bool = True) -> bytes | None:
    """The compiled filter for this machine, or ``None`` where we have none (not x86_64).

    ``memfd=False``: ``memfd_create`` fails with ``ENOMEM`` (a run without a memory cgroup).
    """
    if platform.machine() != "x86_64":
        return None
    refused = dict.fromkeys(sorted(set(DENIED_X86_64.values())), _RET_EPERM)
    if not memfd:
        refused[_MEMFD_CREATE] = _RET_ENOMEM
    answers = sorted(set(refused.values()))
    # 0: load arch; 1: x86_64? go on to 3 : fall to 2; 2: refuse; 3: load the number;
    # 4: x32? refuse; 5..: one test per refused number; then allow; then one return per
    # answer (EPERM first: the x32 test jumps there).
    first_answer = 5 + len(refused) + 1
    at = {answer: first_answer + index for index, answer in enumerate(answers)}
    code = [
        (_LD_W_ABS, 0, 0, _ARCH_OFFSET),
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, _RET_EPERM),
        (_LD_W_ABS, 0, 0, _NR_OFFSET),
        (_JGE_K, at[_RET_EPERM] - 5, 0, _X32_SYSCALL_BIT),
    ]
    for number, answer in refused.items():
        code.append((_JEQ_K, at[answer] - len(code) - 1, 0, number))
    code.append((_RET_K, 0, 0, _RET_ALLOW))
    code += [(_RET_K, 0, 0, answer) for answer in answers]
    assert len(code) == first_answer + len(answers) and len(code) < 256  # one-byte jumps
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in code)

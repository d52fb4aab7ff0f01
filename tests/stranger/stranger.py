"""A stranger on the ranks' ports (docs/DESIGN.md §10): finds every TCP port the watched
processes listen on (their socket inodes in /proc/<pid>/fd against /proc/net/tcp{,6}) and
attacks each one at once, four ways, as fast as it can:
  - garbage: connects and sends random bytes;
  - gloo: connects and sends a crafted 48-byte Gloo header (a 1 MiB unbound-buffer send to
    slot 0, the frame that aborted a rank in pair.cc), then a NOTIFY_RECV_READY;
  - hold: keeps up to 32 connections open without sending anything;
  - churn: connects and closes, ~1,000 connections a second in all.
It knows nothing of the job directory and holds no secret. Used by stranger_world_test.py.
"""
import os
import random
import socket
import struct
import threading
import time


def _listening_inodes():
    """inode -> (ip, port) of every listening TCP socket of this network namespace, from the
    kernel's sock_diag netlink interface filtered to TCP_LISTEN (/proc/net/tcp lists every
    socket, and after a flood its TIME_WAIT entries make each read take tens of ms)."""
    found = {}
    for family in (socket.AF_INET, socket.AF_INET6):
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4) as diag:  # NETLINK_SOCK_DIAG
            # inet_diag_req_v2: family, protocol, ext, pad, states (1 << TCP_LISTEN), sockid
            request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << 10) + bytes(48)
            # nlmsghdr: length, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq, pid
            diag.send(struct.pack("=IHHII", 16 + len(request), 20, 0x301, 1, 0) + request)
            done = False
            while not done:
                data = diag.recv(1 << 16)
                at = 0
                while at + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, at)
                    if kind in (2, 3):  # NLMSG_ERROR, NLMSG_DONE
                        done = True
                        break
                    body = at + 16  # inet_diag_msg: 4 bytes, sockid (48), 5 u32
                    got = data[body]
                    port = struct.unpack_from("!H", data, body + 4)[0]
                    raw = data[body + 8:body + 24]
                    inode = struct.unpack_from("=I", data, body + 4 + 48 + 16)[0]
                    ip = socket.inet_ntop(got, raw[:4] if got == socket.AF_INET else raw)
                    found[str(inode)] = (ip, port)
                    at += (length + 3) & ~3
    return found


def listening_ports(pids):
    """The (ip, port) pairs the processes `pids` listen on."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    table = _listening_inodes()
    return sorted({table[i] for i in inodes if i in table})


def children_of(pid):
    """The pids whose parent is `pid`."""
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                kids += [int(k) for k in listed.read().split()]
    except OSError:
        pass
    return kids


GLOO_SEND_UNBOUND = struct.pack("<6Q", 48 + (1 << 20), 1, 0, 0, 1 << 20, 0)
GLOO_NOTIFY_RECV_READY = struct.pack("<6Q", 48, 3, 7, 0, 1 << 20, 0)


class Stranger:
    """Attacks the ports of the processes `find_pids()` names until stop()."""

    def __init__(self, find_pids):
        self.find_pids = find_pids
        self.ports = []
        self.connected = 0  # connections the kernel accepted
        self.ports_seen = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = []

    def start(self):
        self._threads = [threading.Thread(target=self._watch, daemon=True)]
        for attack in (self._garbage, self._gloo, self._hold, self._churn, self._churn):
            self._threads.append(threading.Thread(target=attack, daemon=True))
        for t in self._threads:
            t.start()

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join()

    def _watch(self):
        first_hits = []
        while not self._stop.is_set():
            try:
                ports = listening_ports(self.find_pids())
            except OSError:
                ports = []
            with self._lock:
                new = [p for p in ports if p not in self.ports_seen]
                self.ports = ports
                self.ports_seen.update(ports)
            # A port is hit the moment it is seen, before the attack threads get to it: a
            # listening socket may live only milliseconds.
            for target in new:
                s = self._connect(target, timeout=0.05)
                if s is not None:
                    try:
                        s.sendall(GLOO_SEND_UNBOUND)
                    except OSError:
                        pass
                    first_hits.append(s)
            time.sleep(0.001)
        for s in first_hits:
            s.close()

    def _targets(self):
        with self._lock:
            return list(self.ports)

    def _connect(self, target, timeout=0.2):
        family = socket.AF_INET6 if ":" in target[0] else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(target)
        except OSError:
            s.close()
            return None
        with self._lock:
            self.connected += 1
        return s

    def _each(self, send):
        while not self._stop.is_set():
            targets = self._targets()
            if not targets:
                time.sleep(0.001)
                continue
            for target in targets:
                s = self._connect(target)
                if s is None:
                    continue
                try:
                    send(s)
                except OSError:
                    pass
                s.close()

    def _garbage(self):
        self._each(lambda s: s.sendall(random.randbytes(random.choice([1, 47, 56, 300, 4096]))))

    def _gloo(self):
        self._each(lambda s: s.sendall(GLOO_SEND_UNBOUND + GLOO_NOTIFY_RECV_READY))

    def _churn(self):
        self._each(lambda s: None)

    def _hold(self):
        held = []
        while not self._stop.is_set():
            for target in self._targets():
                s = self._connect(target)
                if s is not None:
                    held.append(s)
            while len(held) > 32:
                held.pop(0).close()
            time.sleep(0.01)
        for s in held:
            s.close()

"""A redis-server of a bench script's own, on a free port, under callgrind if asked: for
benches/redis_replay.py and benches/redis_floor.py."""
import os
import socket
import subprocess
import time

import redis


class Server:
    """A fresh redis-server keeping nothing on disk; with `callgrind`, run by valgrind, so
    that `instructions()` tells what it executed once it is stopped."""

    def __init__(self, callgrind=False):
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        command = ['redis-server', '--port', str(port), '--save', '', '--appendonly', 'no']
        self.out_file = None
        if callgrind:
            self.out_file = '/tmp/redis_lab.%d.callgrind' % os.getpid()
            command = ['valgrind', '--tool=callgrind',
                       '--callgrind-out-file=' + self.out_file] + command
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.con = redis.Redis(port=port)
        for _ in range(600):
            try:
                self.con.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def instructions(self):
        """The instructions the stopped server executed (callgrind's total); set KEEP to
        keep its profile for callgrind_annotate."""
        with open(self.out_file) as f:
            total = next(int(l.split()[1]) for l in f if l.startswith('totals:'))
        if os.environ.get('KEEP'):
            print('callgrind profile: %s' % self.out_file)
        else:
            os.unlink(self.out_file)
        return total

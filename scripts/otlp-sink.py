#!/usr/bin/env python3
"""A no-op OTLP/HTTP collector for benchmarks: answers every POST with 200 and
an empty protobuf body, and counts what it got. Usage: otlp-sink.py PORT"""
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    posts = 0
    bytes = 0

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        Sink.posts += 1
        Sink.bytes += length
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    # A script starts it in the background, where SIGINT is ignored: TERM stops it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        print(f"posts={Sink.posts} bytes={Sink.bytes}", file=sys.stderr)

# A Python workload that allocates heavily (dicts, lists, strings, bytes, objects, json);
# its output must be identical with and without LD_PRELOAD=libmemarena_malloc.so.
import hashlib
import json


class Node:
    __slots__ = ("key", "children", "payload")

    def __init__(self, key, payload):
        self.key = key
        self.children = []
        self.payload = payload


def build_tree(depth, fanout, prefix=""):
    node = Node(prefix, prefix.encode() * 3)
    if depth > 0:
        for i in range(fanout):
            node.children.append(build_tree(depth - 1, fanout, f"{prefix}{i}"))
    return node


def count(node):
    return 1 + sum(count(child) for child in node.children)


def main():
    digest = hashlib.sha256()
    table = {f"key-{i}": [i, str(i) * (i % 17), {"n": i}] for i in range(50000)}
    digest.update(json.dumps(table, sort_keys=True).encode())
    words = sorted((f"{(i * 7919) % 100003:06d}-word" for i in range(80000)), reverse=True)
    digest.update("".join(words[:5000]).encode())
    buffer = bytearray()
    for i in range(40000):
        buffer += bytes([i % 256]) * (i % 50)
    digest.update(bytes(buffer))
    tree = build_tree(5, 6)
    strings = [s.upper() for s in table if s.endswith("7")]
    del table
    print("nodes", count(tree))
    print("strings", len(strings), "buffer", len(buffer))
    print("sha256", digest.hexdigest())


main()

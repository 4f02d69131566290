"""Writes the pool of real records `hooks.py` draws from, read through the API itself.

Usage: pool.py BASE_URL CA_FILE KEY OUT_FILE
"""

import json
import ssl
import sys
import urllib.request

ENTITIES = ["candidates", "applications", "contacts", "companies", "jobs", "notes", "tasks", "attachments", "users"]


def main():
    base, ca, key, out = sys.argv[1:5]
    tls = ssl.create_default_context(cafile=ca)

    def get(path):
        req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {key}"})
        with urllib.request.urlopen(req, context=tls, timeout=30) as res:
            return json.load(res)["data"]

    pool = {"ids": {}, "phones": [], "emails": [], "member_emails": []}
    for entity in ENTITIES:
        records = get(f"/v1/{entity}?limit=60")
        pool["ids"][entity] = [r["id"] for r in records]
        for r in records:
            for field in ("phone", "phone_as_entered", "mobile"):
                if r.get(field):
                    pool["phones"].append(r[field])
            for e in r.get("emails") or []:
                pool["emails"].append(e)
        if entity == "users":
            pool["member_emails"] = [u["email"] for u in records if u.get("active") and u.get("email")]
    with open(out, "w") as f:
        json.dump(pool, f)
    print(f"pool: {sum(len(v) for v in pool['ids'].values())} ids, {len(pool['phones'])} numbers, {len(pool['emails'])} addresses")


if __name__ == "__main__":
    main()

"""How many anonymous `/authorize` requests it takes to sign a registered application out.

A real center under uvicorn on 127.0.0.1 (SQLite in a temporary data dir) and a real
https server publishing client metadata documents on loopback. Alice signs in through a
registered client and gets a refresh token; then BENCH_FLOOD (1,001) anonymous requests
name a new document URL each, and afterwards the client's refresh is tried. Three runs:

- one source address, the default fetch limits;
- a new source address per request (127.x.y.z: loopback is a /8), the default limits —
  the per-host limit is what stops it;
- a new source address per request with both limits lifted: the worst case, as if the
  attacker had an address and a host per request. Only the clients table's own rule
  (nothing anonymous displaces a client a member signed in through) stands.

Prints, per run, the answers (fetched 200, refused 429), the time taken, and whether
the refresh still works. Against the code before issue 25 the third run's refresh
fails (`invalid_client`) once the flood passes the table's 1,000 clients.
BENCH_FLOOD sets the number of requests, BENCH_RUNS (comma-separated names) the runs.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from bench_center import serving

from center import testing as t
from center.oauth import testing as o

FLOOD = int(os.environ.get("BENCH_FLOOD", "1001"))
RUNS = os.environ.get("BENCH_RUNS", "one-address,an-address-each,an-address-each-unlimited")
UNLIMITED = {
    "oauth_document_rate_limit": "1000000/h",
    "oauth_document_host_rate_limit": "1000000/h",
}


def address(n: int) -> str:
    return f"127.{1 + n // 62500}.{n // 250 % 250}.{1 + n % 250}"


async def flood(url: str, documents: o.DocumentServer, run: str, cycle: bool) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        await o.add_node(http)
        await o.add_member(http)
        client_id = await o.register(http)
        proof = o.pkce()
        code = await o.code_for(http, client_id, proof)
        refresh = (await o.exchange(http, client_id, code, proof)).json()["refresh_token"]
        answers: Counter[int] = Counter()
        start = time.perf_counter()
        for n in range(FLOOD):
            path = f"/{run}-{n}/client.json"
            document = {"client_id": documents.url(path), "redirect_uris": [o.REDIRECT]}
            params = o.authorize_params(documents.publish(path, document), o.pkce())
            source = address(n) if cycle else "127.0.0.1"
            transport = httpx.AsyncHTTPTransport(local_address=source)
            async with httpx.AsyncClient(base_url=url, transport=transport) as stranger:
                answers[(await stranger.get("/authorize", params=params)).status_code] += 1
        elapsed = time.perf_counter() - start
        after = await o.refresh(http, client_id, refresh)
        outcome = "works" if after.status_code == 200 else after.json().get("error")
        print(
            f"  {run:<28} {FLOOD} requests in {elapsed:5.1f} s: "
            f"{answers[200]} fetched, {answers[429]} refused (429), "
            f"{sum(answers.values()) - answers[200] - answers[429]} other; "
            f"the signed-in client's refresh afterwards: {outcome}",
            flush=True,
        )


def main() -> None:
    runs: tuple[tuple[str, bool, dict[str, str]], ...] = (
        ("one-address", False, {}),
        ("an-address-each", True, {}),
        ("an-address-each-unlimited", True, UNLIMITED),
    )
    with tempfile.TemporaryDirectory() as scratch, o.document_server(Path(scratch)) as documents:
        for run, cycle, extra in (run for run in runs if run[0] in RUNS.split(",")):
            settings = t.settings(
                Path(scratch) / run,
                issuer="http://127.0.0.1",
                oauth_client_metadata_hosts=("127.0.0.1",),
                oauth_client_metadata_ca_file=documents.ca_file,
                **extra,
            )
            with serving(settings, passwords=o.fast_passwords()) as url:
                asyncio.run(flood(url, documents, run, cycle))


if __name__ == "__main__":
    main()

"""Benchmark: publishing as a job — how long the HTTP request takes, and the job's wall time.

    .venv/bin/python bench/publish_jobs.py [--nodes 10000] [--seed 7]

In a throwaway data folder (its own SQLite database and filesystem broker), with a real Celery worker
(solo pool) started first and warmed up: for the demo pack and a seeded synthetic graph of ``--nodes``
nodes, it

1. publishes v1 synchronously in this process — the baseline: what the publish request used to do;
2. changes one node title in the draft, then ``POST /api/v1/projects/<slug>/releases/`` as the admin
   (Django's test client in this process, warmed up by one GET: the whole request — middleware, auth,
   the job row, the broker message), and polls the Job row until the worker finished it:
   **request ms** and **job wall s** (from the POST until the job's row says it is done);
3. posts again with the draft unchanged: the job finds nothing to publish.

Prints a Markdown table and a ``SUMMARY`` line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="arg-bench-publish-"))
    os.environ["ARG_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arg_platform.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    command = [sys.executable, "-m", "celery", "-A", "arg_platform", "worker", "--pool", "solo"]
    with open(data / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [*command, "--loglevel", "WARNING"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'platform'}"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            rows = [run_case("demo pack", demo_project())]
            rows.append(run_case(f"synthetic {args.nodes:,}", synthetic_project(args.nodes, args.seed)))
        finally:
            worker.terminate()
            worker.wait(30)
    print(
        "| graph | nodes | sync publish s (baseline) | request ms | job wall s "
        "| unchanged: request ms | job wall s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['name']} | {r['nodes']:,} | {r['sync_s']:.2f} | {r['request_ms']:.0f} | {r['job_s']:.2f} "
            f"| {r['again_request_ms']:.0f} | {r['again_job_s']:.2f} |"
        )
    print(
        "SUMMARY "
        + " ".join(
            f"{key}_{i}={r[key]:.3f}"
            for i, r in enumerate(rows)
            for key in ("sync_s", "request_ms", "job_s", "again_request_ms", "again_job_s")
        )
    )


def demo_project():
    from taxonomy.packs import pack_import, pack_read

    return pack_import(pack_read(ROOT / "packs" / "demo" / "pack.yaml")).project, "N-deploy-tls-info"


def synthetic_project(nodes: int, seed: int):
    from bench.synthetic import synthetic_pack
    from taxonomy.packs import PackDocument, pack_import

    pack = synthetic_pack(nodes=nodes, seed=seed, slug=f"synthetic-{nodes}")
    project = pack_import(PackDocument(data=pack, source=f"synthetic-{nodes}")).project
    return project, pack["nodes"][0]["id"]


def run_case(name: str, case) -> dict[str, object]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from arg_platform.models import Job
    from ontology import services
    from ontology.releases import draft_publish
    from projects.services import membership_set

    project, node_id = case
    started = time.perf_counter()
    release, _ = draft_publish(project=project, actor=None)
    sync_s = time.perf_counter() - started
    admin = get_user_model().objects.create_user(f"bench-admin-{project.pk}", password="x")
    membership_set(project=project, user=admin, role="admin")
    client = Client()
    client.force_login(admin)
    assert client.get(f"/api/v1/projects/{project.slug}/releases/").status_code == 200  # a warm server

    def post_and_wait() -> tuple[float, float]:
        t0 = time.perf_counter()
        response = client.post(f"/api/v1/projects/{project.slug}/releases/", {"notes": "bench"})
        request_ms = (time.perf_counter() - t0) * 1000
        assert response.status_code == 202, response.content
        job_id = response.json()["id"]
        while True:
            job = Job.objects.get(pk=job_id)
            if job.status in (Job.Status.SUCCEEDED, Job.Status.FAILED):
                break
            time.sleep(0.05)
        assert job.status == Job.Status.SUCCEEDED, job.result
        return request_ms, time.perf_counter() - t0

    services.node_update(
        project=project, actor=None, node_id=node_id, changes={"title": "Renamed for the bench"}
    )
    request_ms, job_s = post_and_wait()
    again_request_ms, again_job_s = post_and_wait()
    return {
        "name": name,
        "nodes": release.counts["nodes"],
        "sync_s": sync_s,
        "request_ms": request_ms,
        "job_s": job_s,
        "again_request_ms": again_request_ms,
        "again_job_s": again_job_s,
    }


if __name__ == "__main__":
    main()

"""Publishing the draft as a job: what the browser's and the API's "publish" start (``arg_platform.jobs``).

``publish_job_open`` opens the job (kind ``release.publish``) with the admin's notes and the digest of
the draft they reviewed; the ``ontology.release_publish`` task runs ``publish_job_work``, which is
``draft_publish`` with the job's progress and the job recorded on the release. A job whose release
exists already (its worker was killed after the release committed) returns that release: a job
publishes once. A draft identical to the active release publishes nothing and the job says so.
"""

from __future__ import annotations

from typing import Any

from arg_platform.audit import Actor
from arg_platform.jobs import Progress, job_open
from arg_platform.models import Job
from projects.models import Project

from .models import Release
from .releases import PublishOptions, draft_publish

PUBLISH_JOB = "release.publish"


def publish_job_open(
    *, project: Project, actor: Actor, notes: str = "", draft_digest: str = "", idempotency_key: str = ""
) -> Job:
    """A QUEUED publication job of ``project``'s draft (the caller queues its task on commit)."""
    return job_open(
        kind=PUBLISH_JOB,
        project=project,
        actor=actor,
        params={"notes": notes, "draft_digest": draft_digest},
        idempotency_key=f"{project.pk}:{idempotency_key}" if idempotency_key else "",
    )[0]


def publication_result(release: Release, published: bool) -> dict[str, Any]:
    """A publication job's result: the release it published, or the active release when nothing changed."""
    detail = (
        f"release v{release.version} published and active"
        if published
        else f"the draft is identical to the active release v{release.version}: nothing to publish"
    )
    return {"release": release.version, "release_id": release.pk, "published": published, "detail": detail}


def publish_job_work(job: Job, progress: Progress) -> dict[str, Any]:
    """Publish the job's project draft (once: a release already carrying this job is the result)."""
    done = Release.objects.filter(job_id=job.pk).first()
    if done is not None:
        return publication_result(done, True)
    assert job.project is not None  # publish_job_open gives a publication job its project
    release, published = draft_publish(
        project=job.project,
        actor=job.created_by,
        options=PublishOptions(
            notes=job.params.get("notes", ""),
            draft_digest=job.params.get("draft_digest", ""),
            job_id=job.pk,
            progress=progress,
        ),
    )
    return publication_result(release, published)

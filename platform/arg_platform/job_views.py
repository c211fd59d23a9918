"""A job in the browser: its page and the progress row the page polls (``arg_platform.jobs``).

Members of the job's project read it; another project's job is a 404 like any unknown one. While the
job is QUEUED or RUNNING the row re-polls itself every second (htmx); once it is done the row links to
the release it published, or shows the error.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse

from arg_platform.ui import HtmxHttpRequest, project_view, render_page
from projects.access import ProjectAccess

from .models import Job

TITLES = {
    "release.publish": "Publishing the draft",
    "review.apply_approved": "Applying approved proposals",
    "offline_loop": "Offline loop",
}


def job_context(job: Job) -> dict[str, object]:
    """What the job row shows: the job, its title, whether it is still going, and its log lines."""
    return {
        "job": job,
        "job_title": TITLES.get(job.kind, job.kind),
        "job_live": job.status in (Job.Status.QUEUED, Job.Status.RUNNING),
        "job_percent": round(job.progress * 100),
        "job_log": job.log.splitlines()[-12:],
    }


@project_view("GET")
def job_detail(request: HtmxHttpRequest, access: ProjectAccess, pk: int) -> HttpResponse:
    job = Job.objects.filter(pk=pk, project=access.project).select_related("created_by").first()
    if job is None:
        raise Http404("no such job in this project")
    context = {"nav": "releases", **job_context(job)}
    template = "jobs/partials/job_row.html" if request.htmx else "jobs/job_detail.html"
    return render_page(request, template, context, flash=not request.htmx)

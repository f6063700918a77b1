"""Writing environments: ``palaestra init`` scaffolds one, ``palaestra test`` reviews one.

::

    from palaestra.authoring import check_environment, init_environment

    init_environment("my-env")                     # writes ./my-env, a pip-installable package
    report = check_environment("./my-env/my_env/environment.py")
    print(report.ok, [(c.name, c.status, c.reason) for c in report.checks])
"""

from palaestra.authoring.report import Check, EnvironmentReport, Status
from palaestra.authoring.review import check_environment, check_environment_async
from palaestra.authoring.scaffold import Scaffold, init_environment
from palaestra.authoring.smoke import SmokeOptions

__all__ = [
    "Check",
    "EnvironmentReport",
    "Scaffold",
    "SmokeOptions",
    "Status",
    "check_environment",
    "check_environment_async",
    "init_environment",
]

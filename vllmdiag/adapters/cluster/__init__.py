"""Cells across the nodes of a cluster: :class:`RayExecutor` (``--executor ray``).

Ray is an optional extra (``pip install 'vllmdiag[ray]'``), imported only when a Ray
executor connects; importing this package never needs it.
"""

from vllmdiag.adapters.cluster.ray_executor import INSTALL, RayExecutor, import_ray

__all__ = ["INSTALL", "RayExecutor", "import_ray"]

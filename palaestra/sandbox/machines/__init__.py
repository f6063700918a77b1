"""Machines for machine-shaped tasks: a whole root filesystem per episode, from an image.

A *provider* builds an image from a Dockerfile folder (a Harbor task's ``environment/``) and
starts *boxes* from it: one box per episode, its filesystem a copy-on-write layer over the
image, no network, bounded, torn down on every path. Two providers ship:

- ``rootfs``: the image's layers as directories, an overlay per episode, processes under
  bubblewrap (no daemon; for clusters without Docker).
- ``docker``: Docker (or Podman's Docker API) through its daemon; the daemon runs with no
  bridge and every container with no network.

Providers are a plug-in family (entry-point group ``palaestra.sandboxes``). See ``provider``
for the interface.
"""

from palaestra.sandbox.machines.provider import Box, BoxSpec, Image, Provider

__all__ = ["Box", "BoxSpec", "Image", "Provider"]

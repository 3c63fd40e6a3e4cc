"""Guest kernels: a campaign's `kernel` factor, run in a virtual machine (see docs/guests.md).

- :mod:`fsmeter.guest.kernels`: kernel levels resolved to images, and which accelerator guests get here;
- :mod:`fsmeter.guest.vm`: one guest boot (virtme-ng on QEMU) with a scratch disk and a shared folder;
- :mod:`fsmeter.guest.inside`: what runs in the guest (a level's cells, as whole trials);
- :mod:`fsmeter.guest.host`: the host's side: one boot per kernel level, the trials back into the store.
"""

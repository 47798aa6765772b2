"""Is this folder a valid board entry? Submission checks, in the order a maintainer reads them.

The folder's layout (:mod:`.layout`), its first look (:mod:`.folder`), ``submission.yaml``
(:mod:`.metadata`), every per-item check (:mod:`.validate`), the checks of the entries against
each other (:mod:`.consistency`), the one check list every command uses (:mod:`.accept`) and
``tide-bench submit`` (:mod:`.submit`). Nothing here computes a displayed number or writes a page.
"""

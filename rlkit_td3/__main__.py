"""``python -m rlkit_td3`` runs the ``rlkit-td3`` command."""

import sys

from rlkit_td3.cli import main

sys.exit(main())

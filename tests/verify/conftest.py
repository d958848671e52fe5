"""Release signatures (cvo.verify): real GnuPG keys made by the tests, hostile signatures and stores."""

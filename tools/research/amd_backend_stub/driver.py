from triton.backends.driver import DriverBase


class HIPDriver(DriverBase):
    @staticmethod
    def is_active():
        return False


HIPDriver.__abstractmethods__ = frozenset()

"""What every bbpe model shares: reading a corpus (``corpus``, ``gbk``), progress bars
(``progress``), threads (``threads``) and what the machine allows (``resources``)."""
